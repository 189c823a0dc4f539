/**
 * central-ledger's tables as other Mojaloop services use them (src/metadata/mojaloop-schema.ts,
 * docs/mojaloop-schema.md), over a real MariaDB (skipped loudly without one): participants
 * onboarded, deactivated and given endpoints through our admin API, then quoting-service
 * v17.14.5's own queries (src/data/database.js, written again here) answer as they do on
 * central-ledger: an active participant found with its accounts' ids, an unknown, inactive or
 * deactivated one refused with the error quoting-service picks for the party; endpoints by type;
 * its health check on `migration_lock`; the enumerations with central-ledger's ids; and the quote
 * tables it writes outside simple routing mode, with central-ledger's keys. No table of ours is
 * named as one of central-ledger's, even with the case folded, and a database already holding
 * central-ledger's own schema is refused with the reason.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import knexFactory, { type Knex } from 'knex';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { useMariaDb, type RunningMariaDb } from './support/mariadb';
import { mysqlEnv } from './support/service-process';
import { onboard } from './support/onboard';

const server = useMariaDb("central-ledger's schema for the other Mojaloop services");

/** central-ledger v19.14.0's tables and views (its migrations), and its knex tables. */
const CENTRAL_LEDGER_TABLES = `amountType balanceOfPayments bulkProcessingState bulkTransfer
  bulkTransferAssociation bulkTransferDuplicateCheck bulkTransferError bulkTransferExtension
  bulkTransferFulfilment bulkTransferFulfilmentDuplicateCheck bulkTransferState
  bulkTransferStateChange contactType currency endpointType event expiringTransfer
  externalParticipant fxCharge fxParticipantCurrencyType fxQuote fxQuoteConversionTerms
  fxQuoteConversionTermsExtension fxQuoteDuplicateCheck fxQuoteError fxQuoteResponse
  fxQuoteResponseConversionTerms fxQuoteResponseConversionTermsExtension
  fxQuoteResponseDuplicateCheck fxTransfer fxTransferDuplicateCheck fxTransferError
  fxTransferErrorDuplicateCheck fxTransferExtension fxTransferForwarded fxTransferFulfilment
  fxTransferFulfilmentDuplicateCheck fxTransferParticipant fxTransferStateChange
  fxTransferTimeout fxTransferType fxWatchList geoCode ilpPacket ledgerAccountType
  ledgerEntryType participant participantContact participantCurrency participantEndpoint
  participantLimit participantLimitType participantParty participantPosition
  participantPositionChange party partyIdentifierType partyType quote quoteDuplicateCheck
  quoteError quoteExtension quoteParty quotePartyIdInfoExtension quoteResponse
  quoteResponseDuplicateCheck quoteResponseIlpPacket segment settlement
  settlementContentAggregation settlementDelay settlementGranularity settlementInterchange
  settlementModel settlementParticipantCurrency settlementParticipantCurrencyStateChange
  settlementSettlementWindow settlementState settlementStateChange settlementTransferParticipant
  settlementWindow settlementWindowContent settlementWindowContentStateChange
  settlementWindowState settlementWindowStateChange token transactionInitiator
  transactionInitiatorType transactionReference transactionScenario transactionSubScenario
  transfer transferDuplicateCheck transferError transferErrorDuplicateCheck transferExtension
  transferForwarded transferFulfilment transferFulfilmentDuplicateCheck transferParticipant
  transferParticipantRoleType transferParticipantStateChange transferRules transferState
  transferStateChange transferTimeout quotePartyView quoteView quoteResponseView migration
  migration_lock`.split(/\s+/);

/** quoting-service's LOCAL_ENUM party types, and the FSPIOP error each refusal carries. */
const PAYER_DFSP = 'PAYER_DFSP';
const PAYEE_DFSP = 'PAYEE_DFSP';
const DESTINATION_FSP_ERROR = '3201';
const PAYER_FSP_ID_NOT_FOUND = '3202';
const VALIDATION_ERROR = '3100';
const POSITION = 1;
const SETTLEMENT = 2;

/** What quoting-service's participant lookups decide: the participant's id, or the refusal. */
type Found = { participantId: number; participantCurrencyId: number } | { refused: string };

function refusal(participantType?: string): { refused: string } {
  if (participantType === PAYEE_DFSP) return { refused: DESTINATION_FSP_ERROR };
  if (participantType === PAYER_DFSP) return { refused: PAYER_FSP_ID_NOT_FOUND };
  return { refused: VALIDATION_ERROR };
}

/** quoting-service's queries on central-ledger's tables (its src/data/database.js), our words. */
class QuotingServiceQueries {
  constructor(readonly db: Knex) {}

  async getParticipant(
    name: string,
    options: { participantType?: string; currency: string; ledgerAccountTypeId?: number },
  ): Promise<Found> {
    const rows = await this.db('participant')
      .innerJoin(
        'participantCurrency',
        'participantCurrency.participantId',
        'participant.participantId',
      )
      .where({ 'participant.name': name })
      .andWhere({ 'participantCurrency.currencyId': options.currency })
      .andWhere({
        'participantCurrency.ledgerAccountTypeId': options.ledgerAccountTypeId ?? POSITION,
      })
      .andWhere({ 'participantCurrency.isActive': true })
      .andWhere({ 'participant.isActive': true })
      .select(
        'participant.*',
        'participantCurrency.participantCurrencyId',
        'participantCurrency.currencyId',
      );
    if (rows.length < 1) return refusal(options.participantType);
    return {
      participantId: rows[0].participantId,
      participantCurrencyId: rows[0].participantCurrencyId,
    };
  }

  async getParticipantByName(name: string, participantType?: string): Promise<number | string> {
    const rows = await this.db('participant').where({ name, isActive: 1 }).select();
    return rows.length < 1 ? refusal(participantType).refused : rows[0].participantId;
  }

  async getParticipantEndpoint(name: string, endpointType: string): Promise<string | null> {
    const rows = await this.db('participantEndpoint')
      .innerJoin('participant', 'participant.participantId', 'participantEndpoint.participantId')
      .innerJoin(
        'endpointType',
        'endpointType.endpointTypeId',
        'participantEndpoint.endpointTypeId',
      )
      .where('participant.name', name)
      .andWhere('endpointType.name', endpointType)
      .andWhere('participantEndpoint.isActive', 1)
      .select('participantEndpoint.value');
    return rows.length < 1 ? null : rows[0].value;
  }

  /** The health check: DOWN while this is truthy, or when it throws. */
  async getIsMigrationLocked(): Promise<number> {
    const result = await this.db('migration_lock')
      .orderBy('index', 'desc')
      .first()
      .select('is_locked AS isLocked');
    return result.isLocked;
  }

  /** getInitiatorType, getScenario, getAmountType, getPartyType, ...: the id of a name. */
  async enumerationId(table: string, name: string): Promise<number | undefined> {
    const rows = await this.db(table).where('name', name).select();
    return rows[0]?.[`${table}Id`];
  }

  /** getTransferParticipantRoleType and getLedgerEntryType: only active rows. */
  async activeEnumerationId(table: string, name: string): Promise<number | undefined> {
    const rows = await this.db(table).where({ name, isActive: 1 }).select();
    return rows[0]?.[`${table}Id`];
  }
}

interface Hub {
  service: Service;
  qs: QuotingServiceQueries;
  call(method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<any>;
}

/** As quoting-service connects: knex over mysql2, with the database's own user. */
function connect(mariadb: RunningMariaDb, database: string): Knex {
  const { port, user, password } = mariadb;
  return knexFactory({
    client: 'mysql2',
    connection: { host: '127.0.0.1', port, user, password, database },
  });
}

async function hubOn(
  mariadb: RunningMariaDb,
  t: { after(fn: () => Promise<void>): void },
): Promise<Hub> {
  const database = await mariadb.createDatabase();
  const config = loadConfig({ LOG_LEVEL: 'silent', ...mysqlEnv(mariadb, database) });
  const service = await buildService(config, { ledger: new EmbeddedLedger() });
  const db = connect(mariadb, database);
  t.after(async () => {
    await db.destroy();
    await service.close();
  });
  const call: Hub['call'] = async (method, url, payload) => {
    const response = await service.app.inject({ method, url, ...(payload ? { payload } : {}) });
    assert.ok(
      response.statusCode < 300,
      `${method} ${url}: ${response.statusCode} ${response.body}`,
    );
    return response.body === '' ? undefined : JSON.parse(response.body);
  };
  return { service, qs: new QuotingServiceQueries(db), call };
}

/** The ids our admin API gives a participant's accounts in a currency, by ledger account type. */
async function accountIds(
  hub: Hub,
  name: string,
  currency: string,
): Promise<Record<string, number>> {
  const accounts: { id: number; ledgerAccountType: string; currency: string }[] = await hub.call(
    'GET',
    `/participants/${name}/accounts`,
  );
  return Object.fromEntries(
    accounts.filter((a) => a.currency === currency).map((a) => [a.ledgerAccountType, a.id]),
  );
}

describe("central-ledger's schema for the other Mojaloop services", () => {
  test("quoting-service's participant and endpoint lookups answer as on central-ledger", async (t) => {
    const mariadb = server.current();
    if (mariadb === undefined) return t.skip('no MariaDB');
    const hub = await hubOn(mariadb, t);
    const inject = (o: { method: 'POST' | 'GET'; url: string; payload?: object }) =>
      hub.service.app.inject(o);
    await onboard(inject, ['payerfsp', 'payeefsp', 'gonefsp', 'closedfsp'], '1000', 1000);
    for (const name of ['payerfsp', 'payeefsp'])
      await hub.call('POST', `/participants/${name}/endpoints`, {
        type: 'FSPIOP_CALLBACK_URL_QUOTES',
        value: `http://${name}.local/quotes`,
      });
    await hub.call('PUT', '/participants/gonefsp', { isActive: false });
    const closed = await accountIds(hub, 'closedfsp', 'USD');
    await hub.call('PUT', `/participants/closedfsp/accounts/${closed.POSITION}`, {
      isActive: false,
    });
    const { qs } = hub;

    const payer = await accountIds(hub, 'payerfsp', 'USD');
    const found = await qs.getParticipant('payerfsp', {
      participantType: PAYER_DFSP,
      currency: 'USD',
    });
    assert.ok('participantId' in found, JSON.stringify(found));
    assert.equal(found.participantCurrencyId, payer.POSITION, 'the POSITION account, by its id');
    assert.deepEqual(
      await qs.getParticipant('payerfsp', { currency: 'USD', ledgerAccountTypeId: SETTLEMENT }),
      { participantId: found.participantId, participantCurrencyId: payer.SETTLEMENT },
    );
    assert.equal(await qs.getParticipantByName('payerfsp'), found.participantId);

    for (const [name, currency] of [
      ['nosuchfsp', 'USD'],
      ['gonefsp', 'USD'],
      ['closedfsp', 'USD'],
      ['payeefsp', 'EUR'],
    ] as const) {
      assert.deepEqual(
        await qs.getParticipant(name, { participantType: PAYEE_DFSP, currency }),
        { refused: DESTINATION_FSP_ERROR },
        `${name} in ${currency} refused as payee`,
      );
      assert.deepEqual(
        await qs.getParticipant(name, { participantType: PAYER_DFSP, currency }),
        { refused: PAYER_FSP_ID_NOT_FOUND },
        `${name} in ${currency} refused as payer`,
      );
    }
    assert.deepEqual(await qs.getParticipant('gonefsp', { currency: 'USD' }), {
      refused: VALIDATION_ERROR,
    });
    assert.equal(await qs.getParticipantByName('gonefsp', PAYEE_DFSP), DESTINATION_FSP_ERROR);
    assert.ok(
      'participantId' in
        (await qs.getParticipant('closedfsp', {
          currency: 'USD',
          ledgerAccountTypeId: SETTLEMENT,
        })),
      'central-ledger deactivates a POSITION account alone: the SETTLEMENT one stays active',
    );
    assert.equal(typeof (await qs.getParticipantByName('closedfsp')), 'number');

    await hub.call('PUT', '/participants/gonefsp', { isActive: true });
    assert.ok('participantId' in (await qs.getParticipant('gonefsp', { currency: 'USD' })));

    assert.equal(
      await qs.getParticipantEndpoint('payeefsp', 'FSPIOP_CALLBACK_URL_QUOTES'),
      'http://payeefsp.local/quotes',
    );
    assert.equal(
      await qs.getParticipantEndpoint('payeefsp', 'FSPIOP_CALLBACK_URL_BULK_QUOTES'),
      null,
    );
    assert.equal(await qs.getParticipantEndpoint('nosuchfsp', 'FSPIOP_CALLBACK_URL_QUOTES'), null);
    await hub.call('POST', '/participants/payeefsp/endpoints', {
      type: 'FSPIOP_CALLBACK_URL_QUOTES',
      value: 'http://payeefsp.moved/quotes',
    });
    assert.equal(
      await qs.getParticipantEndpoint('payeefsp', 'FSPIOP_CALLBACK_URL_QUOTES'),
      'http://payeefsp.moved/quotes',
      'a changed endpoint is read at once',
    );
  });

  test("quoting-service's health check and enumerations", async (t) => {
    const mariadb = server.current();
    if (mariadb === undefined) return t.skip('no MariaDB');
    const hub = await hubOn(mariadb, t);
    const { qs } = hub;
    assert.equal(await qs.getIsMigrationLocked(), 0, 'healthy once migrated');
    await qs.db('knex_migrations_lock').update({ is_locked: 1 });
    assert.equal(await qs.getIsMigrationLocked(), 1, 'down while a migration runs');
    await qs.db('knex_migrations_lock').update({ is_locked: 0 });

    const enums = await hub.call('GET', '/enums');
    for (const table of [
      'endpointType',
      'ledgerAccountType',
      'ledgerEntryType',
      'transferParticipantRoleType',
    ]) {
      const rows: Record<string, any>[] = await qs.db(table).select();
      assert.deepEqual(
        Object.fromEntries(rows.map((r) => [r.name, r[`${table}Id`]])),
        enums[table],
        `${table} holds /enums' ids`,
      );
    }
    for (const [table, name, id] of [
      ['transactionInitiatorType', 'CONSUMER', 1],
      ['transactionInitiator', 'PAYEE', 2],
      ['transactionScenario', 'TRANSFER', 1],
      ['amountType', 'RECEIVE', 2],
      ['partyType', 'PAYER', 1],
      ['partyIdentifierType', 'MSISDN', 1],
      ['partyIdentifierType', 'ALIAS', 8],
    ] as const)
      assert.equal(await qs.enumerationId(table, name), id, `${table} ${name}`);
    assert.equal(await qs.enumerationId('transactionSubScenario', 'LOCALLY_DEFINED'), undefined);
    assert.equal(await qs.enumerationId('partyIdentifierType', 'NOT_A_TYPE'), undefined);
    assert.equal(await qs.activeEnumerationId('transferParticipantRoleType', PAYEE_DFSP), 2);
    assert.equal(await qs.activeEnumerationId('ledgerEntryType', 'PRINCIPLE_VALUE'), 1);
    assert.deepEqual(
      (await qs.db('ledgerAccountType').where({ isSettleable: 1 }).select('name')).map(
        (r) => r.name,
      ),
      ['POSITION', 'INTERCHANGE_FEE'],
    );
    const usd = await qs.db('currency').where({ currencyId: 'USD' }).first();
    assert.equal(usd.scale, 2);
  });

  test('the quote tables take what quoting-service writes, with central-ledger keys', async (t) => {
    const mariadb = server.current();
    if (mariadb === undefined) return t.skip('no MariaDB');
    const hub = await hubOn(mariadb, t);
    const inject = (o: { method: 'POST' | 'GET'; url: string; payload?: object }) =>
      hub.service.app.inject(o);
    await onboard(inject, ['payerfsp', 'payeefsp'], '1000', 1000);
    const { qs } = hub;
    const id = (table: string, name: string) => qs.enumerationId(table, name);
    const quoteId = randomUUID();
    const transactionId = randomUUID();
    const party = async (type: 'PAYER' | 'PAYEE', fsp: string) => ({
      quoteId,
      partyTypeId: await id('partyType', type),
      partyIdentifierTypeId: await id('partyIdentifierType', 'MSISDN'),
      partyIdentifierValue: type === 'PAYER' ? '123' : '456',
      fspId: fsp,
      participantId: await qs.getParticipantByName(fsp),
      transferParticipantRoleTypeId: await qs.activeEnumerationId(
        'transferParticipantRoleType',
        `${type}_DFSP`,
      ),
      ledgerEntryTypeId: await qs.activeEnumerationId('ledgerEntryType', 'PRINCIPLE_VALUE'),
      amount: type === 'PAYER' ? '10.0000' : '-10.0000',
      currencyId: 'USD',
    });
    await qs.db.transaction(async (trx) => {
      await trx('quoteDuplicateCheck').insert({ quoteId, hash: 'h' });
      await trx('transactionReference').insert({ quoteId, transactionReferenceId: transactionId });
      await trx('quote').insert({
        quoteId,
        transactionReferenceId: transactionId,
        transactionRequestId: null,
        note: 'a note',
        expirationDate: new Date(Date.now() + 60_000),
        transactionInitiatorId: await id('transactionInitiator', 'PAYER'),
        transactionInitiatorTypeId: await id('transactionInitiatorType', 'CONSUMER'),
        transactionScenarioId: await id('transactionScenario', 'TRANSFER'),
        balanceOfPaymentsId: null,
        amountTypeId: await id('amountType', 'SEND'),
        amount: '10.0000',
        currencyId: 'USD',
      });
      const [payerPartyId] = await trx('quoteParty').insert(await party('PAYER', 'payerfsp'));
      await trx('quoteParty').insert(await party('PAYEE', 'payeefsp'));
      await trx('party').insert({ quotePartyId: payerPartyId, firstName: 'Ada', lastName: 'Ōno' });
      await trx('quotePartyIdInfoExtension').insert({
        quotePartyId: payerPartyId,
        key: 'k',
        value: 'v',
      });
      await trx('geoCode').insert({ quotePartyId: payerPartyId, latitude: '1', longitude: '2' });
      await trx('quoteExtension').insert({ quoteId, transactionId, key: 'k', value: 'värde' });
    });
    const payee = await qs
      .db('quoteParty')
      .innerJoin('partyType', 'partyType.partyTypeId', 'quoteParty.partyTypeId')
      .where('quoteParty.quoteId', quoteId)
      .andWhere('partyType.name', 'PAYEE')
      .select('quoteParty.*');
    assert.equal(payee.length, 1);
    assert.equal(payee[0].amount, '-10.0000');
    assert.equal(payee[0].participantId, await qs.getParticipantByName('payeefsp'));

    await qs.db.transaction(async (trx) => {
      const [quoteResponseId] = await trx('quoteResponse').insert({
        quoteId,
        transferAmountCurrencyId: 'USD',
        transferAmount: '10.0000',
        ilpCondition: 'c'.repeat(43),
        responseExpirationDate: new Date(Date.now() + 60_000),
        isValid: true,
      });
      await trx('quoteResponseDuplicateCheck').insert({ quoteResponseId, quoteId, hash: 'h' });
      await trx('quoteResponseIlpPacket').insert({ quoteResponseId, value: 'packet' });
      await trx('quoteExtension').insert({ quoteId, quoteResponseId, key: 'k', value: 'v' });
      await trx('quoteError').insert({
        quoteId,
        quoteResponseId,
        errorCode: 5100,
        errorDescription: 'e',
      });
    });
    assert.equal((await qs.db('quoteResponseDuplicateCheck').where({ quoteId })).length, 1);

    await assert.rejects(
      qs.db('quote').insert({
        quoteId: randomUUID(),
        transactionReferenceId: transactionId,
        transactionInitiatorId: 1,
        transactionInitiatorTypeId: 1,
        transactionScenarioId: 1,
        amountTypeId: 1,
        amount: '1',
        currencyId: 'ZZZ',
      }),
      /foreign key constraint fails/,
      'a currency central-ledger does not know is refused by its key, as there',
    );

    const conversionRequestId = randomUUID();
    const conversionId = randomUUID();
    const terms = {
      conversionRequestId,
      conversionId,
      determiningTransferId: null,
      initiatingFsp: 'payerfsp',
      counterPartyFsp: 'fxp',
      amountTypeId: await id('amountType', 'SEND'),
      sourceAmount: '10.0000',
      sourceCurrency: 'USD',
      targetAmount: null,
      targetCurrency: 'EUR',
      expirationDate: new Date(Date.now() + 60_000),
    };
    await qs.db.transaction(async (trx) => {
      await trx('fxQuoteDuplicateCheck').insert({ conversionRequestId, hash: 'h' });
      await trx('fxQuote').insert({ conversionRequestId });
      await trx('fxQuoteConversionTerms').insert(terms);
      await trx('fxQuoteConversionTermsExtension').insert({ conversionId, key: 'k', value: 'v' });
      const [fxQuoteResponseId] = await trx('fxQuoteResponse').insert({
        conversionRequestId,
        ilpCondition: 'c'.repeat(43),
      });
      await trx('fxQuoteResponseDuplicateCheck').insert({
        fxQuoteResponseId,
        conversionRequestId,
        hash: 'h',
      });
      await trx('fxQuoteResponseConversionTerms').insert({
        ...terms,
        fxQuoteResponseId,
        targetAmount: '9.0000',
      });
      await trx('fxQuoteResponseConversionTermsExtension').insert({
        conversionId,
        key: 'k',
        value: 'v',
      });
      await trx('fxCharge').insert({
        conversionId,
        chargeType: 'fee',
        sourceAmount: '1.0000',
        sourceCurrency: 'USD',
        targetAmount: '0.9000',
        targetCurrency: 'EUR',
      });
      await trx('fxQuoteError').insert({
        conversionRequestId,
        fxQuoteResponseId,
        errorCode: 5100,
        errorDescription: 'e',
      });
    });
    // quoting-service's _getFxQuoteResponseDetails, its JSON aggregates included.
    const details = await qs
      .db('fxQuoteResponse')
      .join(
        'fxQuoteResponseConversionTerms',
        'fxQuoteResponse.conversionRequestId',
        'fxQuoteResponseConversionTerms.conversionRequestId',
      )
      .where('fxQuoteResponse.conversionRequestId', conversionRequestId)
      .select([
        'fxQuoteResponse.*',
        'fxQuoteResponseConversionTerms.*',
        qs.db.raw(
          '(SELECT JSON_ARRAYAGG(JSON_OBJECT("chargeType", fxCharge.chargeType, "sourceAmount", fxCharge.sourceAmount)) FROM fxCharge WHERE fxCharge.conversionId=fxQuoteResponseConversionTerms.conversionId) AS charges',
        ),
      ])
      .first();
    assert.equal(details.targetAmount, '9.0000');
    // A JSON value, parsed by mysql2 or (MariaDB's JSON is text) by us.
    const charges =
      typeof details.charges === 'string' ? JSON.parse(details.charges) : details.charges;
    assert.deepEqual(charges, [{ chargeType: 'fee', sourceAmount: 1 }]);
  });

  test("no table of ours is named as one of central-ledger's, even case-folded", async (t) => {
    const mariadb = server.current();
    if (mariadb === undefined) return t.skip('no MariaDB');
    const hub = await hubOn(mariadb, t);
    const [rows] = await hub.qs.db.raw('SHOW FULL TABLES');
    const present = (rows as Record<string, string>[]).map((row) => Object.values(row)[0]!);
    const served = new Set(CENTRAL_LEDGER_TABLES);
    const ours = present.filter((name) => !served.has(name));
    const folded = new Set(CENTRAL_LEDGER_TABLES.map((name) => name.toLowerCase()));
    assert.deepEqual(
      ours.filter((name) => folded.has(name.toLowerCase())),
      [],
      'a lower_case_table_names=1 server would merge these',
    );
    assert.ok(ours.includes('participants') && ours.includes('knex_migrations_lock'));
    for (const view of [
      'participant',
      'participantCurrency',
      'participantEndpoint',
      'migration_lock',
    ])
      assert.ok(present.includes(view), view);
  });

  test("a database holding central-ledger's own schema is refused, saying why", async (t) => {
    const mariadb = server.current();
    if (mariadb === undefined) return t.skip('no MariaDB');
    const database = await mariadb.createDatabase();
    const mysql = loadConfig({ LOG_LEVEL: 'silent', ...mysqlEnv(mariadb, database) }).mysql;
    const db = connect(mariadb, database);
    const store = new MySqlMetadataStore(mysql);
    try {
      await db.schema.createTable('migration', (table) => table.increments('id'));
      await assert.rejects(store.migrate(), /central-ledger's own schema \(migration\)/);
    } finally {
      await store.close();
      await db.destroy();
    }
  });
});
