/**
 * central-ledger's tables as the other Mojaloop services sharing its MySQL database use them,
 * under its table and column names (docs/mojaloop-schema.md). quoting-service checks every
 * quote's payer and payee on `participant` joined with `participantCurrency`, finds callback
 * URLs in `participantEndpoint` joined with `endpointType`, and reports itself down while
 * `migration_lock` says a migration runs; outside simple routing mode it also reads the
 * enumerations and writes the quote tables. What it reads of participants is a view over our own
 * tables, never a second copy (docs/decisions/0006-mojaloop-schema-views.md); the enumerations
 * are central-ledger v19.14.0's seeds with their ids; the quote tables are quoting-service's
 * alone, with central-ledger's columns and keys (except keys to views: a view cannot be one's
 * target, and quoting-service writes only participant ids it has just read there).
 */
import type { Knex } from 'knex';
import { CURRENCIES } from '../ports/currencies';
import {
  AMOUNT_TYPES,
  ENDPOINT_TYPES,
  LEDGER_ACCOUNT_TYPES,
  LEDGER_ENTRY_TYPES,
  PARTY_IDENTIFIER_TYPES,
  PARTY_TYPES,
  TRANSACTION_INITIATORS,
  TRANSACTION_INITIATOR_TYPES,
  TRANSACTION_SCENARIOS,
  TRANSFER_PARTICIPANT_ROLE_TYPES,
  numbered,
} from '../ports/enumerations';

type Table = Knex.CreateTableBuilder;

/** Tables only central-ledger's own schema has (`migration`: its knex record of migrations). */
const CENTRAL_LEDGER_SIGNATURE = ['migration', 'participantPosition', 'transferStateChange'];

/** An enumeration table's columns besides `<table>Id` and `name`, as central-ledger has them. */
interface EnumerationShape {
  nameLength: number;
  descriptionLength: number;
  descriptionRequired: boolean;
  isActive: boolean;
  createdDate: boolean;
}

const LISTED: EnumerationShape = {
  nameLength: 50,
  descriptionLength: 512,
  descriptionRequired: false,
  isActive: true,
  createdDate: true,
};
const TRANSACTION_TYPE: EnumerationShape = {
  nameLength: 256,
  descriptionLength: 1024,
  descriptionRequired: false,
  isActive: false,
  createdDate: true,
};

interface Enumeration {
  table: string;
  names: readonly string[];
  shape: EnumerationShape;
  /** Columns of this table only, and their values per name. */
  more?: { columns(t: Table): void; values(name: string): Record<string, unknown> };
}

const ledgerAccountTypeIds = numbered(LEDGER_ACCOUNT_TYPES);
/** The ledger account type central-ledger's seed gives an entry type (the others have none). */
const ENTRY_ACCOUNT_TYPES: Record<string, (typeof LEDGER_ACCOUNT_TYPES)[number]> = {
  PRINCIPLE_VALUE: 'POSITION',
  INTERCHANGE_FEE: 'INTERCHANGE_FEE',
};

/** Seeded in this order: `ledgerEntryType` refers to `ledgerAccountType`. */
const ENUMERATIONS: Enumeration[] = [
  { table: 'endpointType', names: ENDPOINT_TYPES, shape: LISTED },
  {
    table: 'ledgerAccountType',
    names: LEDGER_ACCOUNT_TYPES,
    shape: LISTED,
    more: {
      columns: (t) => t.boolean('isSettleable').notNullable().defaultTo(false),
      values: (name) => ({ isSettleable: name === 'POSITION' || name === 'INTERCHANGE_FEE' }),
    },
  },
  {
    table: 'ledgerEntryType',
    names: LEDGER_ENTRY_TYPES,
    shape: LISTED,
    more: {
      columns: (t) => {
        t.integer('ledgerAccountTypeId').unsigned().nullable();
        t.foreign('ledgerAccountTypeId')
          .references('ledgerAccountTypeId')
          .inTable('ledgerAccountType');
      },
      values: (name) => {
        const type = ENTRY_ACCOUNT_TYPES[name];
        return { ledgerAccountTypeId: type === undefined ? null : ledgerAccountTypeIds[type] };
      },
    },
  },
  { table: 'transferParticipantRoleType', names: TRANSFER_PARTICIPANT_ROLE_TYPES, shape: LISTED },
  { table: 'amountType', names: AMOUNT_TYPES, shape: TRANSACTION_TYPE },
  {
    table: 'partyIdentifierType',
    names: PARTY_IDENTIFIER_TYPES,
    shape: { ...LISTED, descriptionRequired: true, isActive: false, createdDate: false },
  },
  {
    table: 'partyType',
    names: PARTY_TYPES,
    shape: {
      nameLength: 128,
      descriptionLength: 256,
      descriptionRequired: true,
      isActive: false,
      createdDate: false,
    },
  },
  { table: 'transactionInitiator', names: TRANSACTION_INITIATORS, shape: TRANSACTION_TYPE },
  {
    table: 'transactionInitiatorType',
    names: TRANSACTION_INITIATOR_TYPES,
    shape: TRANSACTION_TYPE,
  },
  { table: 'transactionScenario', names: TRANSACTION_SCENARIOS, shape: TRANSACTION_TYPE },
  // Sub-scenarios are the scheme's own: central-ledger seeds none.
  { table: 'transactionSubScenario', names: [], shape: TRANSACTION_TYPE },
];

/** A column of central-ledger's: the row's creation, stamped by the database. */
function createdDate(t: Table, knex: Knex): void {
  t.dateTime('createdDate').notNullable().defaultTo(knex.fn.now());
}

/** A key `column` → `table`.`column` (or `to`). */
function refers(t: Table, column: string, table: string, to = column): void {
  t.foreign(column).references(to).inTable(table);
}

/** An amount column as central-ledger's: decimal(18,4). */
function amount(t: Table, column: string): Knex.ColumnBuilder {
  return t.decimal(column, 18, 4);
}

/** A currency code column, keyed to `currency`. */
function currency(t: Table, column: string, length = 3): Knex.ColumnBuilder {
  refers(t, column, 'currency', 'currencyId');
  return t.string(column, length);
}

function enumerationTable(knex: Knex, enumeration: Enumeration): (t: Table) => void {
  const { table, shape, more } = enumeration;
  return (t) => {
    t.increments(`${table}Id`).primary();
    t.string('name', shape.nameLength).notNullable().unique();
    const description = t.string('description', shape.descriptionLength);
    if (shape.descriptionRequired) description.notNullable();
    else description.nullable();
    if (shape.isActive) t.boolean('isActive').notNullable().defaultTo(true);
    if (shape.createdDate) createdDate(t, knex);
    more?.columns(t);
  };
}

/** Written by quoting-service outside simple routing mode, in the order their keys need. */
const QUOTE_TABLES: [string, (t: Table, knex: Knex) => void][] = [
  [
    'quoteDuplicateCheck',
    (t, knex) => {
      t.string('quoteId', 36).primary();
      t.string('hash', 1024).nullable();
      createdDate(t, knex);
    },
  ],
  [
    'transactionReference',
    (t, knex) => {
      t.string('transactionReferenceId', 36).primary();
      t.string('quoteId', 36).nullable().index();
      refers(t, 'quoteId', 'quoteDuplicateCheck');
      createdDate(t, knex);
    },
  ],
  [
    'quote',
    (t, knex) => {
      t.string('quoteId', 36).primary();
      t.string('transactionReferenceId', 36).notNullable();
      refers(t, 'transactionReferenceId', 'transactionReference');
      t.string('transactionRequestId', 36).nullable();
      t.text('note').nullable();
      t.dateTime('expirationDate').nullable();
      for (const type of [
        'transactionInitiator',
        'transactionInitiatorType',
        'transactionScenario',
      ])
        enumerationKey(t, type).notNullable();
      // balanceOfPayments (IMF codes) is no table here: the code is kept unchecked.
      t.integer('balanceOfPaymentsId').unsigned().nullable();
      enumerationKey(t, 'transactionSubScenario').nullable();
      enumerationKey(t, 'amountType').notNullable();
      amount(t, 'amount').notNullable().defaultTo(0);
      currency(t, 'currencyId', 255).nullable();
      createdDate(t, knex);
    },
  ],
  [
    'quoteParty',
    (t, knex) => {
      t.bigIncrements('quotePartyId').primary();
      quoteKey(t);
      enumerationKey(t, 'partyType').notNullable();
      enumerationKey(t, 'partyIdentifierType').notNullable();
      t.string('partyIdentifierValue', 128).notNullable();
      t.string('partySubIdOrTypeId', 128).nullable();
      t.string('fspId', 255).nullable();
      t.integer('participantId').unsigned().nullable();
      t.string('merchantClassificationCode', 4).nullable();
      t.string('partyName', 128).nullable();
      enumerationKey(t, 'transferParticipantRoleType').notNullable();
      enumerationKey(t, 'ledgerEntryType').notNullable();
      amount(t, 'amount').notNullable();
      currency(t, 'currencyId').notNullable();
      createdDate(t, knex);
    },
  ],
  [
    'party',
    (t) => {
      // Names in any script (central-ledger converts this table so).
      t.charset('utf8mb4');
      t.collate('utf8mb4_unicode_ci');
      t.bigIncrements('partyId').primary();
      quotePartyKey(t);
      for (const name of ['firstName', 'middleName', 'lastName']) t.string(name, 128).nullable();
      t.dateTime('dateOfBirth').nullable();
    },
  ],
  [
    'quoteResponse',
    (t, knex) => {
      t.bigIncrements('quoteResponseId').primary();
      quoteKey(t);
      currency(t, 'transferAmountCurrencyId').notNullable();
      amount(t, 'transferAmount').notNullable();
      currency(t, 'payeeReceiveAmountCurrencyId').nullable();
      amount(t, 'payeeReceiveAmount').nullable();
      t.string('payeeFspFeeCurrencyId', 3).nullable();
      amount(t, 'payeeFspFeeAmount').nullable();
      currency(t, 'payeeFspCommissionCurrencyId').nullable();
      amount(t, 'payeeFspCommissionAmount').nullable();
      t.string('ilpCondition', 256).notNullable();
      t.dateTime('responseExpirationDate').nullable();
      t.boolean('isValid').nullable();
      createdDate(t, knex);
    },
  ],
  [
    'quoteResponseIlpPacket',
    (t) => {
      quoteResponseKey(t).primary();
      t.text('value').notNullable();
    },
  ],
  [
    'geoCode',
    (t, knex) => {
      t.increments('geoCodeId').primary();
      quotePartyKey(t);
      t.string('latitude', 50).notNullable();
      t.string('longitude', 50).notNullable();
      createdDate(t, knex);
    },
  ],
  [
    'quoteExtension',
    (t, knex) => {
      t.bigIncrements('quoteExtensionId').primary();
      quoteKey(t);
      quoteResponseKey(t).nullable();
      t.string('transactionId', 36).nullable();
      refers(t, 'transactionId', 'transactionReference', 'transactionReferenceId');
      extensionKeyValue(t);
      createdDate(t, knex);
    },
  ],
  [
    'quoteResponseDuplicateCheck',
    (t, knex) => {
      quoteResponseKey(t).primary();
      quoteKey(t);
      t.string('hash', 255).nullable();
      createdDate(t, knex);
    },
  ],
  [
    'quoteError',
    (t, knex) => {
      t.bigIncrements('quoteErrorId').primary();
      quoteKey(t);
      quoteResponseKey(t).nullable();
      errorColumns(t, knex);
    },
  ],
  [
    'quotePartyIdInfoExtension',
    (t, knex) => {
      t.bigIncrements('quotePartyIdInfoExtensionId').primary();
      quotePartyKey(t);
      extensionKeyValue(t);
      createdDate(t, knex);
    },
  ],
  [
    'fxQuote',
    (t, knex) => {
      t.string('conversionRequestId', 36).primary();
      createdDate(t, knex);
    },
  ],
  [
    'fxQuoteResponse',
    (t, knex) => {
      t.bigIncrements('fxQuoteResponseId').primary();
      fxQuoteKey(t);
      t.string('ilpCondition', 256).notNullable();
      createdDate(t, knex);
    },
  ],
  [
    'fxQuoteError',
    (t, knex) => {
      t.bigIncrements('fxQuoteErrorId').primary();
      fxQuoteKey(t);
      fxQuoteResponseKey(t).nullable();
      errorColumns(t, knex);
    },
  ],
  [
    'fxQuoteDuplicateCheck',
    (t, knex) => {
      t.string('conversionRequestId', 36).primary();
      t.string('hash', 1024).nullable();
      createdDate(t, knex);
    },
  ],
  [
    'fxQuoteResponseDuplicateCheck',
    (t, knex) => {
      fxQuoteResponseKey(t).primary();
      fxQuoteKey(t);
      t.string('hash', 255).nullable();
      createdDate(t, knex);
    },
  ],
  ['fxQuoteConversionTerms', (t, knex) => conversionTerms(t, knex, { response: false })],
  [
    'fxQuoteConversionTermsExtension',
    (t, knex) =>
      conversionExtension(t, knex, {
        id: 'fxQuoteConversionTermExtension',
        terms: 'fxQuoteConversionTerms',
      }),
  ],
  ['fxQuoteResponseConversionTerms', (t, knex) => conversionTerms(t, knex, { response: true })],
  [
    'fxQuoteResponseConversionTermsExtension',
    (t, knex) =>
      conversionExtension(t, knex, {
        id: 'fxQuoteResponseConversionTermsExtension',
        terms: 'fxQuoteResponseConversionTerms',
      }),
  ],
  [
    'fxCharge',
    (t) => {
      t.bigIncrements('fxChargeId').primary();
      t.string('chargeType', 32).notNullable();
      t.string('conversionId', 36).notNullable();
      refers(t, 'conversionId', 'fxQuoteResponseConversionTerms');
      for (const side of ['source', 'target']) {
        amount(t, `${side}Amount`).nullable();
        t.string(`${side}Currency`, 3).nullable();
      }
    },
  ],
];

/** `<type>Id`, keyed to the enumeration table `type`. */
function enumerationKey(t: Table, type: string): Knex.ColumnBuilder {
  refers(t, `${type}Id`, type);
  return t.integer(`${type}Id`).unsigned();
}

function quoteKey(t: Table): void {
  t.string('quoteId', 36).notNullable();
  refers(t, 'quoteId', 'quote');
}

function quotePartyKey(t: Table): void {
  t.bigInteger('quotePartyId').unsigned().notNullable();
  refers(t, 'quotePartyId', 'quoteParty');
}

function quoteResponseKey(t: Table): Knex.ColumnBuilder {
  refers(t, 'quoteResponseId', 'quoteResponse');
  return t.bigInteger('quoteResponseId').unsigned();
}

function fxQuoteKey(t: Table): void {
  t.string('conversionRequestId', 36).notNullable();
  refers(t, 'conversionRequestId', 'fxQuote');
}

function fxQuoteResponseKey(t: Table): Knex.ColumnBuilder {
  refers(t, 'fxQuoteResponseId', 'fxQuoteResponse');
  return t.bigInteger('fxQuoteResponseId').unsigned();
}

function extensionKeyValue(t: Table): void {
  t.string('key', 128).notNullable();
  // Values in any script (central-ledger converts these columns so).
  t.text('value').notNullable().collate('utf8mb4_unicode_ci');
}

function errorColumns(t: Table, knex: Knex): void {
  t.integer('errorCode').unsigned().notNullable();
  t.string('errorDescription', 128).notNullable();
  createdDate(t, knex);
}

/** An fxQuote's conversion terms, as requested or (`response`) as the FXP answered them. */
function conversionTerms(t: Table, knex: Knex, { response }: { response: boolean }): void {
  t.string('conversionId', 255).primary();
  t.string('determiningTransferId', 36).nullable();
  fxQuoteKey(t);
  if (response) fxQuoteResponseKey(t).notNullable();
  enumerationKey(t, 'amountType').notNullable();
  t.string('initiatingFsp', 255).nullable();
  t.string('counterPartyFsp', 255).nullable();
  for (const side of ['source', 'target']) {
    // Only a request may leave an amount open: the FXP's answer fills both.
    const sideAmount = amount(t, `${side}Amount`);
    if (response) sideAmount.notNullable();
    else sideAmount.nullable();
    currency(t, `${side}Currency`).notNullable();
  }
  t.dateTime('expirationDate').notNullable();
  createdDate(t, knex);
}

/** Extensions of conversion terms (`terms`); `id` is central-ledger's name of the row id. */
function conversionExtension(
  t: Table,
  knex: Knex,
  { id, terms }: { id: string; terms: string },
): void {
  t.bigIncrements(id).primary();
  t.string('conversionId', 36).notNullable();
  refers(t, 'conversionId', terms);
  extensionKeyValue(t);
  createdDate(t, knex);
}

/** Our ISO 8601 UTC text as central-ledger's DATETIME (UTC, whole seconds). */
function datetime(column: string): string {
  return `CAST(REPLACE(LEFT(${column}, 19), 'T', ' ') AS DATETIME)`;
}

/**
 * The views over our own tables (SQL SECURITY INVOKER: a reader's own grants apply, so no view
 * depends on the account that migrated). A participant's POSITION and SETTLEMENT accounts are a
 * `participantCurrency` row each, numbered as our admin API numbers the accounts; only POSITION
 * accounts are ever deactivated, as in central-ledger. An endpoint's id is derived from its
 * participant's and its type's (no reader looks rows up by it).
 */
function views(knexLockTable: string): Record<string, string> {
  return {
    participant: `SELECT p.id AS participantId, p.name AS name,
        CAST(NULL AS CHAR(512)) AS description, p.is_active AS isActive,
        ${datetime('p.created')} AS createdDate, p.created_by AS createdBy,
        p.is_proxy AS isProxy
      FROM participants p`,
    participantCurrency: `SELECT
        CASE t.name WHEN 'POSITION' THEN c.position_account_id ELSE c.settlement_account_id END
          AS participantCurrencyId,
        p.id AS participantId, c.currency AS currencyId,
        t.ledgerAccountTypeId AS ledgerAccountTypeId,
        CASE t.name WHEN 'POSITION' THEN c.position_account_active ELSE TRUE END AS isActive,
        ${datetime('c.created_date')} AS createdDate, p.created_by AS createdBy
      FROM participant_currencies c
        JOIN participants p ON p.name = c.participant
        JOIN ledgerAccountType t ON t.name IN ('POSITION', 'SETTLEMENT')`,
    participantEndpoint: `SELECT p.id * 1000 + t.endpointTypeId AS participantEndpointId,
        p.id AS participantId, t.endpointTypeId AS endpointTypeId, e.value AS value,
        TRUE AS isActive, ${datetime('p.created')} AS createdDate, p.created_by AS createdBy
      FROM participant_endpoints e
        JOIN participants p ON p.name = e.participant
        JOIN endpointType t ON t.name = e.type`,
    // knex's lock row, as central-ledger's own knex keeps it: locked while a migration runs.
    migration_lock: `SELECT \`index\`, is_locked FROM ${knexLockTable}`,
  };
}

async function refuseCentralLedgerSchema(knex: Knex): Promise<void> {
  const present: string[] = [];
  for (const table of CENTRAL_LEDGER_SIGNATURE)
    if (await knex.schema.hasTable(table)) present.push(table);
  if (present.length > 0)
    throw new Error(
      `this database holds central-ledger's own schema (${present.join(', ')}): ` +
        'tb-central-ledger needs a database of its own (docs/mojaloop-schema.md)',
    );
}

/** Creates `table` unless a run of this migration cut short (DDL commits at once) made it. */
async function createOnce(knex: Knex, table: string, build: (t: Table) => void): Promise<void> {
  if (!(await knex.schema.hasTable(table))) await knex.schema.createTable(table, build);
}

/**
 * The migration, knex's lock table named (`<migrations table>_lock`). It may run again after
 * failing part way: every table is created once, every row inserted once, every view replaced.
 */
export function mojaloopSchema({ knexLockTable }: { knexLockTable: string }): {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
} {
  const viewed = views(knexLockTable);
  return {
    name: '011_mojaloop_schema',
    async up(knex) {
      await refuseCentralLedgerSchema(knex);
      await createOnce(knex, 'currency', (t) => {
        t.string('currencyId', 3).primary();
        t.string('name', 128).nullable();
        t.boolean('isActive').notNullable().defaultTo(true);
        createdDate(t, knex);
        t.integer('scale').unsigned().notNullable().defaultTo(4);
      });
      await knex('currency')
        .insert([...CURRENCIES.values()].map((c) => ({ currencyId: c.code, scale: c.scale })))
        .onConflict('currencyId')
        .ignore();
      for (const enumeration of ENUMERATIONS) {
        const { table, names, more } = enumeration;
        await createOnce(knex, table, enumerationTable(knex, enumeration));
        if (names.length === 0) continue;
        // Ids given, not drawn: auto_increment_increment is not 1 on every server (Galera).
        await knex(table)
          .insert(
            names.map((name, i) => ({
              [`${table}Id`]: i + 1,
              name,
              description: name,
              ...more?.values(name),
            })),
          )
          .onConflict(`${table}Id`)
          .ignore();
      }
      for (const [table, build] of QUOTE_TABLES)
        await createOnce(knex, table, (t) => build(t, knex));
      for (const [view, select] of Object.entries(viewed))
        await knex.raw(
          `CREATE OR REPLACE ALGORITHM = MERGE SQL SECURITY INVOKER VIEW ${view} AS ${select}`,
        );
    },
    async down(knex) {
      for (const view of Object.keys(viewed)) await knex.raw(`DROP VIEW IF EXISTS ${view}`);
      for (const [table] of [...QUOTE_TABLES].reverse()) await knex.schema.dropTableIfExists(table);
      for (const { table } of [...ENUMERATIONS].reverse())
        await knex.schema.dropTableIfExists(table);
      await knex.schema.dropTableIfExists('currency');
    },
  };
}
