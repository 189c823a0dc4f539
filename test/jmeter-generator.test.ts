/**
 * The JMeter test-data generator (jmeter/generator): every config key takes effect, the data is
 * deterministic per seed, and the TSV files, the manifest and the plan agree with the items.
 * Also jmeter/summary.ts, which run.sh uses to judge a run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { decodeIlpPrepare, decodeIlpTransaction } from '../src/domain/shared/ilp';
import { parseAmount, requireCurrency } from '../src/domain/shared/money';
import { main as cliMain } from '../jmeter/generator/cli';
import {
  DEFAULT_EXPIRATION,
  GeneratorConfigError,
  parseConfig,
  type RawConfig,
} from '../jmeter/generator/config';
import { dataItems, planData, type DataItem, type DataPlan } from '../jmeter/generator/generate';
import { manifestOf, writeData } from '../jmeter/generator/output';
import { Prng } from '../jmeter/generator/prng';
import { ABSENT, CHECKS, parseTable, tableHeader, TABLES } from '../jmeter/generator/tables';
import { formatSummary, parseCsv, readSamples, summarize } from '../jmeter/summary';

/** The 2022 plan config (stresstesting/test-plan/CLPlanConfig.json), smaller. */
const BASE: RawConfig = {
  'participant-accounts': 4,
  'account-lookups': 7,
  transfers: 40,
  rejections: 6,
  'transfer-lookups': 9,
  'transfers-single-http-request': false,
  'transfers-amount-max': 200,
  'transfers-currency': 'USD',
};

function plan(
  overrides: Partial<RawConfig> & Record<string, unknown> = {},
  seed = 'test',
): DataPlan {
  return planData(parseConfig({ ...BASE, ...overrides }), seed);
}

function items(p: DataPlan): DataItem[] {
  return [...dataItems(p)];
}

function countOf(list: DataItem[], type: DataItem['actionType']): number {
  return list.filter((i) => i.actionType === type).length;
}

function body(item: DataItem): Record<string, any> {
  assert.ok(item.request.body, `${item.actionType} has a body`);
  return item.request.body as Record<string, any>;
}

function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'jmeter-gen-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the 2022 config file is accepted as it is', () => {
  const config = parseConfig({
    'participant-accounts': 2,
    'account-lookups': 3000,
    transfers: 10000,
    rejections: 3,
    'transfer-lookups': 0,
    'transfers-single-http-request': false,
    'transfers-amount-max': 200,
    'transfers-currency': 'USD',
  });
  assert.equal(config.participantAccounts, 2);
  assert.equal(config.amountMax, 20000n);
  assert.equal(config.overLiquidity, 0);
  assert.equal(config.expiration, DEFAULT_EXPIRATION);
});

test('config errors are refused with the key named', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ 'transfer-lookup': 1 }, /unknown config key\(s\): transfer-lookup/],
    [{ transfers: -1 }, /transfers must be a whole number/],
    [{ transfers: 1.5 }, /transfers must be a whole number/],
    [{ 'participant-accounts': '4' }, /participant-accounts must be a whole number/],
    [
      { 'transfers-single-http-request': 'yes' },
      /transfers-single-http-request must be true or false/,
    ],
    [{ 'transfers-currency': 'usd' }, /transfers-currency "usd"/],
    [{ 'transfers-currency': 'XCG' }, /transfers-currency "XCG"/],
    [{ 'transfers-amount-max': 0 }, /transfers-amount-max 0: .*greater than zero/],
    [{ 'transfers-amount-max': '1.001' }, /transfers-amount-max "1.001": .*decimal places/],
    [{ 'transfers-amount-max': 1e21 }, /transfers-amount-max/],
    [{ 'transfers-amount-max': -5 }, /transfers-amount-max/],
    [{ rejections: 30, 'transfers-over-liquidity': 11 }, /exceed transfers/],
    [{ 'participant-accounts': 1 }, /participant-accounts >= 2/],
    [
      { 'participant-accounts': 0, transfers: 0, rejections: 0, 'transfer-lookups': 0 },
      /account-lookups need participant-accounts >= 1/,
    ],
    [
      { transfers: 3, rejections: 0, 'transfers-over-liquidity': 3 },
      /transfer-lookups need at least one transfer that is created/,
    ],
    [{ 'transfers-expiration': '2100-01-01' }, /transfers-expiration/],
    [{ 'participant-liquidity': 'lots' }, /participant-liquidity/],
  ];
  for (const [overrides, message] of cases) {
    assert.throws(
      () => parseConfig({ ...BASE, ...overrides }),
      (e: unknown) => e instanceof GeneratorConfigError && message.test(e.message),
      JSON.stringify(overrides),
    );
  }
  assert.throws(() => parseConfig([]), GeneratorConfigError);
  assert.throws(() => parseConfig(null), GeneratorConfigError);
});

test('participant-accounts: that many create_participant items, fspJM<hex> names of at most 30 chars, unique in the run and across seeds', () => {
  for (const n of [2, 5, 300]) {
    const p = plan({ 'participant-accounts': n });
    const created = items(p).filter((i) => i.actionType === 'create_participant');
    assert.equal(created.length, n);
    const names = created.map((i) => body(i).name as string);
    assert.equal(new Set(names).size, n);
    for (const name of names) {
      assert.match(name, /^fspJM[0-9a-f]+$/);
      assert.ok(name.length <= 30, name);
    }
    assert.deepEqual(names, p.participants);
    for (const i of created) {
      assert.deepEqual(body(i), { name: body(i).name, currency: 'USD', newlyCreated: false });
      assert.deepEqual(i.response, {
        status: 200,
        fields: { '$.name': body(i).name, '$.currency': 'USD', '$.newlyCreated': 'true' },
      });
    }
  }
  const other = plan({}, 'another seed').participants;
  assert.equal(other.filter((n) => plan().participants.includes(n)).length, 0);
  // The largest count still fits the 30 characters of the participant name schema.
  const last = planData(
    parseConfig({
      ...BASE,
      'participant-accounts': 65536,
      transfers: 0,
      rejections: 0,
      'transfer-lookups': 0,
      'account-lookups': 0,
    }),
    's',
  ).participants.at(-1)!;
  assert.ok(last.length <= 30, last);
});

test('account-lookups: that many lookups, after everything else, of participants created earlier, expecting the final positions', () => {
  for (const n of [0, 1, 25]) {
    const list = items(plan({ 'account-lookups': n }));
    const lookups = list.filter((i) => i.actionType === 'account_lookup');
    assert.equal(lookups.length, n);
    const firstLookup = list.findIndex((i) => i.actionType === 'account_lookup');
    if (n > 0)
      assert.ok(
        list.slice(firstLookup).every((i) => i.actionType === 'account_lookup'),
        'account lookups come last',
      );
    const created = new Set(
      list.filter((i) => i.actionType === 'create_participant').map((i) => body(i).name),
    );
    for (const lookup of lookups) {
      const name = lookup.request.path.replace('/jmeter/participants/', '');
      assert.ok(created.has(name), name);
      assert.equal(lookup.request.method, 'GET');
      assert.equal(lookup.response.fields['$.name'], name);
    }
  }
  // The expected POSITION is what the committed transfers add up to, and they sum to zero.
  const p = plan({ 'account-lookups': 40 });
  const position = new Map<string, bigint>();
  for (const t of p.transfers.filter((x) => x.kind === 'commit')) {
    position.set(t.payer, (position.get(t.payer) ?? 0n) + t.amount);
    position.set(t.payee, (position.get(t.payee) ?? 0n) - t.amount);
  }
  assert.equal(
    p.finalPositions.reduce((a, b) => a + b, 0n),
    0n,
  );
  const usd = requireCurrency('USD');
  for (const lookup of items(p).filter((i) => i.actionType === 'account_lookup')) {
    const name = lookup.response.fields['$.name']!;
    const expected =
      lookup.response.fields["$.accounts[?(@.ledgerAccountType=='POSITION')].value"]!;
    const minor = expected.startsWith('-')
      ? -parseAmount(expected.slice(1), usd, { allowZero: true })
      : parseAmount(expected, usd, { allowZero: true });
    assert.equal(minor, position.get(name) ?? 0n, name);
    assert.equal(
      lookup.response.fields["$.accounts[?(@.ledgerAccountType=='POSITION')].reservedValue"],
      '0',
    );
    assert.equal(
      lookup.response.fields["$.accounts[?(@.ledgerAccountType=='SETTLEMENT')].value"],
      '-1000000000',
    );
  }
});

test('transfers: that many distinct transfers between two different participants, each prepared before it is fulfilled', () => {
  for (const single of [false, true]) {
    const list = items(
      plan({
        transfers: 30,
        rejections: 4,
        'transfers-over-liquidity': 3,
        'transfers-single-http-request': single,
      }),
    );
    const prepares = list.filter((i) => i.request.path === '/jmeter/transfers/prepare');
    assert.equal(prepares.length, 30);
    assert.equal(new Set(prepares.map((i) => body(i).transferId)).size, 30);
    for (const prepare of prepares) {
      const b = body(prepare);
      assert.notEqual(b.payerFsp, b.payeeFsp);
      assert.match(
        b.transferId,
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    }
    const seen = new Set<string>();
    for (const item of list) {
      if (item.request.path === '/jmeter/transfers/prepare') seen.add(body(item).transferId);
      if (item.request.method === 'PUT')
        assert.ok(seen.has(item.request.path.split('/')[2]!), 'PUT after its prepare');
    }
    const firstTransfer = list.findIndex((i) => i.actionType !== 'create_participant');
    assert.ok(
      list.slice(0, firstTransfer).every((i) => i.actionType === 'create_participant') &&
        list.slice(firstTransfer).every((i) => i.actionType !== 'create_participant'),
      'participants first',
    );
  }
  assert.equal(
    items(plan({ transfers: 0, rejections: 0, 'transfer-lookups': 0 })).filter((i) =>
      i.actionType.startsWith('transfer_'),
    ).length,
    0,
  );
});

test("transfers-single-http-request: one /jmeter request with fulfil: true, or the prepare with fulfil: false then the payee's FSPIOP PUT", () => {
  const single = items(plan({ 'transfers-single-http-request': true, rejections: 0 }));
  assert.equal(countOf(single, 'transfer_prepare'), 0);
  assert.equal(countOf(single, 'transfer_fulfil'), 0);
  assert.equal(countOf(single, 'transfer_prepare_fulfil'), 40);
  for (const item of single.filter((i) => i.actionType === 'transfer_prepare_fulfil')) {
    const b = body(item);
    assert.equal(b.fulfil, true);
    assert.equal(b.reject, undefined);
    // The fulfilment goes along, so the service checks it against the condition.
    assert.equal(
      createHash('sha256').update(Buffer.from(b.fulfilment, 'base64url')).digest('base64url'),
      b.condition,
    );
    assert.deepEqual(item.response, {
      status: 201,
      fields: {
        '$.transferId': b.transferId,
        '$.transferState': 'COMMITTED',
        '$.errorInformation.errorCode': null,
      },
    });
  }

  const two = items(plan({ 'transfers-single-http-request': false, rejections: 0 }));
  assert.equal(countOf(two, 'transfer_prepare_fulfil'), 0);
  assert.equal(countOf(two, 'transfer_prepare'), 40);
  assert.equal(countOf(two, 'transfer_fulfil'), 40);
  for (let i = 0; i < two.length; i++) {
    if (two[i]!.actionType !== 'transfer_prepare') continue;
    const prepare = body(two[i]!);
    assert.equal(prepare.fulfil, false);
    assert.equal(prepare.fulfilment, undefined);
    assert.equal(two[i]!.response.fields['$.transferState'], 'RESERVED');
    assert.equal(two[i]!.response.status, 201);
    const fulfil = two[i + 1]!;
    assert.equal(fulfil.actionType, 'transfer_fulfil');
    assert.equal(fulfil.request.method, 'PUT');
    assert.equal(fulfil.request.path, `/transfers/${prepare.transferId}`);
    assert.equal(fulfil.request.headers['fspiop-source'], prepare.payeeFsp);
    assert.equal(fulfil.request.headers['fspiop-destination'], prepare.payerFsp);
    assert.match(
      fulfil.request.headers['content-type']!,
      /^application\/vnd\.interoperability\.transfers\+json;version=1\.1$/,
    );
    const answer = body(fulfil);
    assert.equal(answer.transferState, 'COMMITTED');
    assert.match(answer.completedTimestamp, /^\$\{__time\(/);
    // A real condition/fulfilment pair: condition = base64url(sha256(32-byte preimage)).
    const preimage = Buffer.from(answer.fulfilment, 'base64url');
    assert.equal(preimage.length, 32);
    assert.equal(createHash('sha256').update(preimage).digest('base64url'), prepare.condition);
    assert.deepEqual(fulfil.response, {
      status: 200,
      fields: {
        '$.transferId': prepare.transferId,
        '$.transferState': 'COMMITTED',
        '$.errorInformation.errorCode': null,
      },
    });
  }
});

test('rejections: that many transfers prepared then rejected, in either mode', () => {
  for (const n of [0, 1, 13]) {
    const two = items(plan({ rejections: n }));
    const rejects = two.filter((i) => i.actionType === 'transfer_reject');
    assert.equal(rejects.length, n);
    for (const reject of rejects) {
      assert.equal(reject.request.method, 'PUT');
      assert.equal(body(reject).errorInformation.errorCode, '5104');
      assert.equal(body(reject).fulfilment, undefined);
      assert.equal(reject.response.fields['$.transferState'], 'ABORTED');
      const prepare = two[two.indexOf(reject) - 1]!;
      assert.equal(prepare.actionType, 'transfer_prepare');
      assert.equal(reject.request.path, `/transfers/${body(prepare).transferId}/error`);
    }
    const single = items(plan({ rejections: n, 'transfers-single-http-request': true })).filter(
      (i) => i.actionType === 'transfer_reject',
    );
    assert.equal(single.length, n);
    for (const reject of single) {
      assert.equal(reject.request.path, '/jmeter/transfers/prepare');
      assert.equal(body(reject).fulfil, true);
      assert.equal(body(reject).reject, true);
      assert.equal(reject.response.status, 201);
      assert.equal(reject.response.fields['$.transferState'], 'ABORTED');
    }
  }
});

test('transfers-over-liquidity: prepares that must be refused with 4001 whatever order they arrive in', () => {
  for (const single of [false, true]) {
    const p = plan({ 'transfers-over-liquidity': 5, 'transfers-single-http-request': single });
    const list = items(p);
    const refused = list.filter(
      (i) => i.response.fields['$.errorInformation.errorCode'] === '4001',
    );
    assert.equal(refused.length, 5);
    const usd = requireCurrency('USD');
    for (const item of refused) {
      assert.equal(item.actionType, single ? 'transfer_prepare_fulfil' : 'transfer_prepare');
      assert.equal(item.response.status, 400);
      assert.equal(item.response.fields['$.transferState'], null);
      // No second step for a refused prepare.
      const next = list[list.indexOf(item) + 1];
      assert.ok(
        next === undefined ||
          next.request.method !== 'PUT' ||
          !next.request.path.endsWith(body(item).transferId),
      );
      // More than the liquidity plus everything the payer could have received.
      const income = p.transfers
        .filter((t) => t.kind === 'commit' && t.payee === body(item).payerFsp)
        .reduce((sum, t) => sum + t.amount, 0n);
      assert.ok(parseAmount(body(item).amount.amount, usd) > 100_000_000_000n + income);
    }
  }
  // participant-liquidity moves the threshold.
  const small = plan({ 'transfers-over-liquidity': 2, 'participant-liquidity': '5000' });
  for (const t of small.transfers.filter((x) => x.kind === 'over_liquidity'))
    assert.ok(t.amount > 500_000n && t.amount < 100_000_000n);
});

test('the budget check refuses configs whose answers would depend on arrival order', () => {
  assert.throws(
    () =>
      plan({
        'participant-accounts': 2,
        transfers: 1000,
        rejections: 0,
        'transfers-amount-max': 10_000_000,
      }),
    /more than its liquidity/,
  );
  assert.throws(
    () =>
      plan({ 'participant-accounts': 2, transfers: 10, rejections: 0, 'participant-liquidity': 1 }),
    /more than its liquidity/,
  );
  // Every payer's committed and rejected amounts fit in its liquidity.
  const p = plan({
    'participant-accounts': 2,
    transfers: 1000,
    rejections: 100,
    'transfers-amount-max': 1_000_000,
  });
  for (const name of p.participants) {
    const out = p.transfers
      .filter((t) => t.payer === name && t.kind !== 'over_liquidity')
      .reduce((sum, t) => sum + t.amount, 0n);
    assert.ok(out <= p.config.liquidity);
  }
});

test('transfer-lookups: that many lookups, after the transfers, of transfers created earlier, expecting their final state and amount', () => {
  for (const n of [0, 1, 50]) {
    const list = items(plan({ 'transfer-lookups': n, 'transfers-over-liquidity': 4 }));
    const lookups = list.filter((i) => i.actionType === 'transfer_lookup');
    assert.equal(lookups.length, n);
    const created = new Map<string, DataItem>();
    for (const [index, item] of list.entries()) {
      if (item.request.path === '/jmeter/transfers/prepare' && item.response.status !== 400)
        created.set(body(item).transferId, item);
      if (item.actionType !== 'transfer_lookup') continue;
      const [, , , participant, , id] = item.request.path.split('/');
      const prepare = created.get(id!);
      assert.ok(prepare, `lookup of ${id} after its creation (item ${index})`);
      assert.ok(participant === body(prepare).payerFsp || participant === body(prepare).payeeFsp);
      const finish = list[list.indexOf(prepare) + 1]!;
      const state =
        finish.request.method === 'PUT' && finish.request.path.startsWith(`/transfers/${id}`)
          ? finish.response.fields['$.transferState']
          : prepare.response.fields['$.transferState'];
      assert.equal(item.response.fields['$.transferState'], state);
      assert.equal(item.response.fields['$.transferId'], id);
      assert.equal(item.response.fields['$.amount.amount'], body(prepare).amount.amount);
      assert.equal(item.response.fields['$.amount.currency'], 'USD');
    }
    if (n > 0) {
      const first = list.findIndex((i) => i.actionType === 'transfer_lookup');
      assert.ok(
        list
          .slice(0, first)
          .every((i) => !['transfer_lookup', 'account_lookup'].includes(i.actionType)),
      );
    }
  }
});

test("transfers-amount-max and transfers-currency: amounts in (0, max], exact, with at most the currency's decimals, in that currency everywhere", () => {
  const cases: [string, number | string, string][] = [
    ['USD', 200, '200'],
    ['JPY', 5000, '5000'],
    ['BHD', '0.05', '0.05'],
    ['CLF', '1.2345', '1.2345'],
    ['TZS', 1, '1'],
  ];
  for (const [code, max, maxText] of cases) {
    const currency = requireCurrency(code);
    const p = plan({
      'transfers-currency': code,
      'transfers-amount-max': max,
      transfers: 300,
      rejections: 10,
      'transfer-lookups': 20,
    });
    const maxMinor = parseAmount(maxText, currency);
    const amounts = new Set<bigint>();
    for (const item of items(p)) {
      if (item.actionType === 'create_participant') assert.equal(body(item).currency, code);
      if (item.request.path !== '/jmeter/transfers/prepare') continue;
      const amount = body(item).amount;
      assert.equal(amount.currency, code);
      assert.equal(typeof amount.amount, 'string');
      const fraction = (amount.amount.split('.')[1] ?? '') as string;
      assert.ok(fraction.length <= currency.scale, `${amount.amount} ${code}`);
      const minor = parseAmount(amount.amount, currency);
      assert.ok(minor > 0n && minor <= maxMinor, `${amount.amount} ${code} in (0, ${maxText}]`);
      amounts.add(minor);
      // The ILP packet carries the same amount (minor units), condition and expiry, and a Mojaloop
      // transaction.
      const packet = decodeIlpPrepare(body(item).ilpPacket);
      assert.equal(packet.amount, minor);
      assert.equal(packet.executionCondition, body(item).condition);
      assert.equal(packet.expiresAt, body(item).expiration);
      const transaction = decodeIlpTransaction(body(item).ilpPacket) as any;
      assert.deepEqual(transaction.amount, amount);
      assert.equal(transaction.payer.partyIdInfo.fspId, body(item).payerFsp);
      assert.equal(transaction.payee.partyIdInfo.fspId, body(item).payeeFsp);
      assert.match(packet.destination, /^g\.fspjm[0-9a-f]+\.msisdn\.\d+$/);
    }
    for (const item of items(p).filter((i) => i.actionType === 'transfer_lookup'))
      assert.equal(item.response.fields['$.amount.currency'], code);
    // Random, not one value (a max of one minor unit excepted).
    if (maxMinor > 10n) assert.ok(amounts.size > 5, `${code}: ${amounts.size} distinct amounts`);
  }
});

test('transfers-expiration: far in the future by default, else as given', () => {
  const expirations = (p: DataPlan) =>
    new Set(
      items(p)
        .filter((i) => i.request.path === '/jmeter/transfers/prepare')
        .map((i) => body(i).expiration),
    );
  assert.deepEqual([...expirations(plan())], [DEFAULT_EXPIRATION]);
  assert.ok(Date.parse(DEFAULT_EXPIRATION) > Date.now() + 50 * 365 * 24 * 3600 * 1000);
  assert.deepEqual(
    [...expirations(plan({ 'transfers-expiration': '2099-06-30T12:00:00.000Z' }))],
    ['2099-06-30T12:00:00.000Z'],
  );
});

test('determinism: the same config and seed write the same bytes; another seed writes other data', () => {
  withTempDir((dir) => {
    const config = parseConfig({ ...BASE, 'transfers-over-liquidity': 3 });
    writeData(planData(config, '42'), join(dir, 'a'));
    writeData(planData(config, '42'), join(dir, 'b'));
    writeData(planData(config, '43'), join(dir, 'c'));
    const files = readdirSync(join(dir, 'a')).sort();
    assert.deepEqual(files, [
      'account-lookups.tsv',
      'data.json',
      'manifest.json',
      'participants.tsv',
      'rejections.tsv',
      'transfer-lookups.tsv',
      'transfers.tsv',
    ]);
    for (const file of files) {
      assert.ok(
        readFileSync(join(dir, 'a', file)).equals(readFileSync(join(dir, 'b', file))),
        `${file} identical for the same seed`,
      );
      assert.ok(
        !readFileSync(join(dir, 'a', file)).equals(readFileSync(join(dir, 'c', file))),
        `${file} differs for another seed`,
      );
    }
    const a = JSON.parse(readFileSync(join(dir, 'a', 'data.json'), 'utf8')) as DataItem[];
    const c = JSON.parse(readFileSync(join(dir, 'c', 'data.json'), 'utf8')) as DataItem[];
    const ids = (list: DataItem[]) =>
      new Set(
        list
          .filter((i) => i.request.path === '/jmeter/transfers/prepare')
          .map((i) => body(i).transferId),
      );
    assert.equal(
      [...ids(a)].filter((id) => ids(c).has(id)).length,
      0,
      'no transfer id shared between seeds',
    );
  });
});

test('data.json holds the items; the manifest counts them; the TSV rows carry the same requests and checks', () => {
  withTempDir((dir) => {
    for (const single of [false, true]) {
      const p = plan({ 'transfers-over-liquidity': 3, 'transfers-single-http-request': single });
      const manifest = writeData(p, dir);
      const list = JSON.parse(readFileSync(join(dir, 'data.json'), 'utf8')) as DataItem[];
      assert.deepEqual(list, items(p));
      assert.deepEqual(manifest, manifestOf(p));
      for (const type of Object.keys(manifest.actionTypes) as DataItem['actionType'][])
        assert.equal(manifest.actionTypes[type], countOf(list, type), type);
      assert.equal(manifest.samples, list.length);

      // Each TSV step is an item, in order: transfers.tsv the committed ones, rejections.tsv the
      // rest.
      const fromTables: DataItem[][] = [];
      for (const table of TABLES) {
        const text = readFileSync(join(dir, table.file), 'utf8');
        assert.ok(!text.includes('\r'));
        assert.equal(text.split('\n')[0], tableHeader(table.name).join('\t'));
        const rows = parseTable(text);
        assert.equal(rows.length, manifest.tables[table.file]!.rows, table.file);
        const stepsOf = (row: Record<string, string>) =>
          [1, 2].filter((s) => (row[`s${s}_label`] ?? '') !== '');
        assert.equal(
          rows.reduce((sum, row) => sum + stepsOf(row).length, 0),
          manifest.tables[table.file]!.samples,
          table.file,
        );
        fromTables.push(
          rows
            .map((row) => stepsOf(row).map((s) => toItem(row, s)))
            .flat() as unknown as DataItem[],
        );
      }
      const [participants, transfers, rejections, transferLookups, accountLookups] =
        fromTables as unknown as DataItem[][];
      assert.deepEqual(
        participants,
        list.filter((i) => i.actionType === 'create_participant'),
      );
      const transferItems = list.filter(
        (i) => !['create_participant', 'transfer_lookup', 'account_lookup'].includes(i.actionType),
      );
      assert.deepEqual([...transfers!, ...rejections!].length, transferItems.length);
      for (const item of [...transfers!, ...rejections!])
        assert.ok(
          transferItems.some((t) => sameStep(t, item)),
          JSON.stringify(item).slice(0, 200),
        );
      assert.ok(
        transfers!.every(
          (i) =>
            ['transfer_prepare', 'transfer_fulfil', 'transfer_prepare_fulfil'].includes(
              i.actionType,
            ) && i.response.fields['$.errorInformation.errorCode'] === null,
        ),
      );
      assert.deepEqual(
        transferLookups,
        list.filter((i) => i.actionType === 'transfer_lookup'),
      );
      assert.deepEqual(
        accountLookups,
        list.filter((i) => i.actionType === 'account_lookup'),
      );
    }
  });
});

/** An item rebuilt from step s of a TSV row (headers other than fspiop-* are fixed in the plan). */
function toItem(row: Record<string, string>, s: number): DataItem {
  const fields: Record<string, string | null> = {};
  for (let k = 1; k <= CHECKS; k++) {
    const path = row[`s${s}_check${k}`]!;
    if (path !== '$.__unused')
      fields[path] = row[`s${s}_expect${k}`] === ABSENT ? null : row[`s${s}_expect${k}`]!;
    else assert.equal(row[`s${s}_expect${k}`], ABSENT);
  }
  const method = row[`s${s}_method`] as DataItem['request']['method'];
  const headers: Record<string, string> =
    method === 'GET'
      ? { accept: 'application/json' }
      : method === 'PUT'
        ? {
            'content-type': 'application/vnd.interoperability.transfers+json;version=1.1',
            accept: 'application/vnd.interoperability.transfers+json;version=1.1',
            'fspiop-source': row[`s${s}_source`]!,
            'fspiop-destination': row[`s${s}_destination`]!,
          }
        : { 'content-type': 'application/json', accept: 'application/json' };
  const item: DataItem = {
    actionType: row[`s${s}_label`] as DataItem['actionType'],
    request: { method, path: row[`s${s}_path`]!, headers },
    response: { status: Number(row[`s${s}_status`]), fields },
  };
  if (row[`s${s}_body`] !== '') item.request.body = JSON.parse(row[`s${s}_body`]!);
  return item;
}

function sameStep(a: DataItem, b: DataItem): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

test('the plan reads exactly the TSV columns the generator writes, and checks every slot', () => {
  const jmx = readFileSync(join(__dirname, '..', 'jmeter', 'plan', 'central-ledger.jmx'), 'utf8');
  const columns = new Set(TABLES.flatMap((t) => tableHeader(t.name)));
  const used = new Set([...jmx.matchAll(/\$\{(s[12]_[a-z0-9_]+)\}/g)].map((m) => m[1]!));
  for (const variable of used)
    assert.ok(columns.has(variable), `${variable} used by the plan is a TSV column`);
  for (let s = 1; s <= 2; s++) {
    for (let k = 1; k <= CHECKS; k++) {
      assert.ok(
        used.has(`s${s}_check${k}`) && used.has(`s${s}_expect${k}`),
        `slot ${s}/${k} is checked`,
      );
    }
  }
  for (const table of TABLES)
    assert.ok(
      jmx.includes(`\${__P(dataDir,data/default)}/${table.file}`),
      `the plan reads ${table.file}`,
    );
  // Every thread group is in the plan, and they run one after the other.
  for (const table of TABLES)
    assert.ok(jmx.includes(`testname="${table.threadGroup}"`), table.threadGroup);
  assert.match(jmx, /<boolProp name="TestPlan.serialize_threadgroups">true<\/boolProp>/);
  // Field checks read the extracted variables, not the body (Assertion.scope, not Sample.scope).
  assert.equal(
    (jmx.match(/<stringProp name="Assertion.scope">variable<\/stringProp>/g) ?? []).length,
    7 * CHECKS,
  ); // 7 samplers: setUp, 2 + 2 transfer steps, 2 lookups
  assert.ok(!jmx.includes('Sample.scope'));
});

test('Prng: reproducible, uniform enough, and unbiased bounds', () => {
  const a = new Prng('x');
  const b = new Prng('x');
  const c = new Prng('y');
  const seqA = Array.from({ length: 100 }, () => a.nextUint32());
  assert.deepEqual(
    seqA,
    Array.from({ length: 100 }, () => b.nextUint32()),
  );
  assert.notDeepEqual(
    seqA,
    Array.from({ length: 100 }, () => c.nextUint32()),
  );
  const rng = new Prng('buckets');
  const buckets = [0, 0, 0, 0, 0, 0, 0];
  for (let i = 0; i < 70_000; i++) buckets[rng.below(7)]!++;
  for (const n of buckets) assert.ok(n > 9_000 && n < 11_000, String(buckets));
  for (let i = 0; i < 1000; i++) {
    const v = rng.bigBelow(10n ** 22n);
    assert.ok(v >= 0n && v < 10n ** 22n);
    assert.equal(rng.bigBelow(1n), 0n);
  }
  assert.match(
    rng.uuidV4(),
    /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  assert.deepEqual(rng.shuffle([1, 2, 3, 4, 5]).sort(), [1, 2, 3, 4, 5]);
});

test('cli: writes the data set; refuses bad arguments and configs', () => {
  withTempDir((dir) => {
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(BASE));
    const stdout = process.stdout.write;
    const stderr = process.stderr.write;
    const output: string[] = [];
    process.stdout.write = ((text: string) => output.push(text) > 0) as typeof process.stdout.write;
    process.stderr.write = ((text: string) => output.push(text) > 0) as typeof process.stderr.write;
    try {
      assert.equal(cliMain(['--config', configFile, '--seed', '7', '--out', join(dir, 'out')]), 0);
      assert.match(
        output.join(''),
        /4 participants, 40 transfers \(34 committed, 6 rejected, 0 over liquidity\), 9 transfer lookups, 7 account lookups: 100 requests/,
      );
      assert.equal(JSON.parse(readFileSync(join(dir, 'out', 'manifest.json'), 'utf8')).seed, '7');
      assert.equal(cliMain(['--config', configFile, '--out', join(dir, 'out')]), 2);
      assert.equal(
        cliMain(['--config', configFile, '--seed', '7', '--out', join(dir, 'out'), '--bogus']),
        2,
      );
      writeFileSync(configFile, JSON.stringify({ ...BASE, transfers: 'many' }));
      assert.equal(cliMain(['--config', configFile, '--seed', '7', '--out', join(dir, 'out')]), 1);
      assert.equal(
        cliMain(['--config', join(dir, 'missing.json'), '--seed', '7', '--out', join(dir, 'out')]),
        1,
      );
      assert.match(output.join(''), /transfers must be a whole number/);
    } finally {
      process.stdout.write = stdout;
      process.stderr.write = stderr;
    }
  });
});

test('summary: parses JMeter CSV, pairs prepare and fulfil per thread, counts errors and missing samples', () => {
  const header =
    'timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect';
  const row = (
    ts: number,
    elapsed: number,
    label: string,
    thread: string,
    success = true,
    message = '',
  ) =>
    `${ts},${elapsed},${label},200,OK,${thread},text,${success},${message},1,1,2,2,http://x,1,0,0`;
  const csv =
    [
      header,
      row(1000, 5, 'transfer_prepare', 'transfers 1-1'),
      row(1000, 3, 'transfer_prepare', 'transfers 1-2'),
      row(1004, 6, 'transfer_fulfil', 'transfers 1-2'),
      row(1006, 4, 'transfer_fulfil', 'transfers 1-1'),
      row(1011, 2, 'transfer_prepare', 'transfers 1-1'),
      row(1014, 2, 'transfer_fulfil', 'transfers 1-1'),
      row(
        2000,
        1,
        'transfer_lookup',
        'transfer lookups 3-1',
        false,
        '"transfer_lookup /x: $.transferState expected COMMITTED, got RESERVED\nmore, ""quoted"""',
      ),
    ].join('\n') + '\n';
  assert.equal(parseCsv(csv).length, 8);
  const samples = readSamples(csv);
  assert.equal(samples.length, 7);
  assert.equal(
    samples[6]!.failureMessage,
    'transfer_lookup /x: $.transferState expected COMMITTED, got RESERVED\nmore, "quoted"',
  );
  const summary = summarize(samples, {
    transfer_prepare: 3,
    transfer_fulfil: 3,
    transfer_lookup: 2,
  });
  assert.equal(summary.samples, 7);
  assert.equal(summary.errors, 1);
  assert.equal(summary.transfers.committed, 3);
  assert.equal(summary.transfers.threads, 2);
  // Transfer latencies: 1000→1010, 1000→1010, 1011→1016; the group spans 1000..1016 ms.
  assert.equal(summary.transfers.p50, 10);
  assert.equal(summary.transfers.p99, 10);
  assert.equal(summary.transfers.max, 10);
  assert.deepEqual(summary.mismatches, ['transfer_lookup: 1 samples, the data set has 2']);
  assert.match(formatSummary(summary), /errors 1 .*\n.*3 in .* with 2 threads/);
  assert.match(
    formatSummary(summary),
    /first failures:\n {2}transfer_lookup: .*expected COMMITTED, got RESERVED more, "quoted"/,
  );
});
