/**
 * The reference's worked example (shared/reference/mojaloop-central-settlement.md) walked through
 * every state over HTTP, with both kinds of refusal (close and settlement), abort, a window with
 * transfers still RESERVED at close, and GROSS settlement in another currency. Used on the
 * embedded ledger and on a real cluster (test/settlement.test.ts).
 */
import assert from 'node:assert/strict';
import { errorCode, type Hub } from './settlement-hub';
import { type Answer } from './service-process';

/** central-settlement's refusal: a code and the words after "Generic validation error - ". */
function refusedWith(
  answer: { status: number; body: any; text: string },
  code: string,
  words?: string,
): void {
  assert.equal(errorCode(answer), code, answer.text);
  if (words !== undefined)
    assert.match(
      answer.body.errorInformation.errorDescription,
      new RegExp(words.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
      answer.text,
    );
}

export async function workedExample(hub: Hub): Promise<void> {
  await hub.onboardHub();
  await hub.onboard('A', '1000', '5000');
  await hub.onboard('B', '100000', '100000');
  await hub.onboard('C', '100000', '600');
  await hub.onboard('Z', '1000', '1000');
  const w1 = await hub.openWindowId();
  refusedWith(
    await hub.v2('POST', `/settlementWindows/${w1}`, { state: 'CLOSED', reason: 'nothing yet' }),
    '3100',
    `Window ${w1} is empty`,
  );

  // Window 1: four commits, one abort, two left RESERVED at close.
  for (const [payer, payee, amount] of [
    ['A', 'B', '300'],
    ['C', 'B', '450'],
    ['B', 'A', '50'],
    ['A', 'C', '100'],
  ] as const) {
    assert.equal((await hub.transfer(payer, payee, amount, 'commit')).status, 201);
  }
  // Z's transfers cancel out: listed with a net of 0 (central-settlement's SETTLEMENT_NET_ZERO).
  for (const [payer, payee] of [
    ['Z', 'A'],
    ['A', 'Z'],
  ] as const)
    assert.equal((await hub.transfer(payer, payee, '20', 'commit')).status, 201);
  await hub.transfer('A', 'B', '70', 'abort');
  const late = await hub.transfer('B', 'A', '40', 'none');
  await hub.transfer('C', 'B', '25', 'none');
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['350', '-660', '375']);
  assert.equal((await hub.transfer('A', 'B', '700', 'none')).errorCode, '4200');
  assert.equal((await hub.transfer('C', 'B', '300', 'none')).errorCode, '4001');

  // Close: bad bodies and an unknown window change nothing; the answer is the new OPEN window.
  refusedWith(await hub.v2('POST', `/settlementWindows/${w1}`, { state: 'CLOSED' }), '3102');
  refusedWith(
    await hub.v2('POST', `/settlementWindows/${w1}`, { state: 'OPEN', reason: 'r' }),
    '3101',
  );
  refusedWith(
    await hub.v2('POST', '/settlementWindows/99999', { state: 'CLOSED', reason: 'r' }),
    '3100',
    'Window 99999 does not exist',
  );
  const closed = await hub.v2('POST', `/settlementWindows/${w1}`, {
    state: 'CLOSED',
    reason: 'close 1',
  });
  assert.equal(closed.status, 200, closed.text);
  const w2 = closed.body.settlementWindowId as number;
  assert.equal(closed.body.state, 'OPEN');
  assert.deepEqual(closed.body.content, []);
  assert.equal(await hub.openWindowId(), w2);
  refusedWith(
    await hub.v2('POST', `/settlementWindows/${w1}`, { state: 'CLOSED', reason: 'again' }),
    '3100',
    `Window ${w1} is not open`,
  );
  const window1 = (await hub.v2('GET', `/settlementWindows/${w1}`)).body;
  assert.equal(window1.state, 'CLOSED');
  assert.deepEqual(
    window1.content.map((c: any) => [c.ledgerAccountType, c.currencyId, c.state]),
    [['POSITION', 'USD', 'CLOSED']],
  );
  refusedWith(await hub.v2('GET', '/settlementWindows/99999'), '2001');
  refusedWith(await hub.v2('GET', '/settlementWindows'), '3100', 'Use at least one parameter');

  // The RESERVED one commits into window 2, with one more transfer.
  await hub.finish(late.id, 'B', 'A', 'commit', late.fulfilment);
  assert.equal(
    await hub.transferState(late.id, 'B'),
    'COMMITTED',
    'a NET transfer stays COMMITTED (settled by a settlement, not by itself)',
  );
  await hub.transfer('A', 'B', '10', 'commit');
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['320', '-670', '375']);

  // Settlement refusals, then S1 over window 1.
  refusedWith(
    await hub.v2('POST', '/settlements', {
      settlementModel: 'NOPE',
      reason: 'r',
      settlementWindows: [{ id: w1 }],
    }),
    '3100',
    'Settlement model not found: NOPE',
  );
  refusedWith(
    await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'r',
      settlementWindows: [{ id: w2 }],
    }),
    '3100',
    `Inapplicable windows ${w2}`,
  );
  refusedWith(
    await hub.v2('POST', '/settlements', { settlementModel: 'DEFERREDNETUSD', reason: 'r' }),
    '3102',
  );
  const created = await hub.v2('POST', '/settlements', {
    settlementModel: 'DEFERREDNETUSD',
    reason: 'settle 1',
    settlementWindows: [{ id: w1 }],
  });
  assert.equal(created.status, 200, created.text);
  const s1 = created.body.id as number;
  assert.equal(created.body.state, 'PENDING_SETTLEMENT');
  assert.equal(created.body.settlementModel, 'DEFERREDNETUSD');
  const accountOf = async (short: string): Promise<number> => hub.accountId(short, 'POSITION');
  const zAccount = await accountOf('Z');
  const nets = new Map<number, unknown>(
    created.body.participants.flatMap((p: any) =>
      p.accounts.map((a: any) => [a.id, a.netSettlementAmount]),
    ),
  );
  assert.deepEqual(
    [
      nets.get(await accountOf('A')),
      nets.get(await accountOf('B')),
      nets.get(await accountOf('C')),
      nets.get(await accountOf('Z')),
    ],
    [
      { amount: 350, currency: 'USD' },
      { amount: -700, currency: 'USD' },
      { amount: 350, currency: 'USD' },
      { amount: 0, currency: 'USD' },
    ],
  );
  assert.equal(nets.size, 4, 'every account that moved in window 1, and no other');
  assert.equal((await hub.v2('GET', `/settlementWindows/${w1}`)).body.state, 'PENDING_SETTLEMENT');
  refusedWith(
    await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'r',
      settlementWindows: [{ id: w1 }],
    }),
    '3100',
    `Inapplicable windows ${w1}`,
  );

  // A transition out of turn is refused per account (HTTP 200), nothing changes.
  const early = await hub.v2(
    'PUT',
    `/settlements/${s1}/participants/${participantOf(created.body, await accountOf('A'))}/accounts/${await accountOf('A')}`,
    { state: 'PS_TRANSFERS_COMMITTED', reason: 'too early' },
  );
  assert.equal(early.status, 200, early.text);
  assert.equal(
    early.body.participants[0].accounts[0].errorInformation.errorDescription,
    'Generic client error - State change not allowed',
  );
  refusedWith(
    await hub.v2('PUT', `/settlements/${s1}`, { state: 'ABORTED' }),
    '3102',
    'State and reason are mandatory',
  );
  // The schema's settlement states are ABORTED and INVALID: another is malformed (3101), INVALID
  // refused by the handler (3100).
  refusedWith(await hub.v2('PUT', `/settlements/${s1}`, { state: 'FOO', reason: 'r' }), '3101');
  refusedWith(
    await hub.v2('PUT', `/settlements/${s1}`, { state: 'INVALID', reason: 'r' }),
    '3100',
    'Invalid request payload input',
  );

  await hub.settleAll(s1, 'PS_TRANSFERS_RECORDED');
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['320', '-670', '375']);
  const reserved = await hub.settleAll(s1, 'PS_TRANSFERS_RESERVED');
  assert.equal(reserved.body.state, 'PS_TRANSFERS_RESERVED');
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['320', '30', '375']);
  await hub.settleAll(s1, 'PS_TRANSFERS_COMMITTED');
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['-30', '30', '25']);
  refusedWith(
    await hub.v2('PUT', `/settlements/${s1}`, { state: 'ABORTED', reason: 'late' }),
    '3100',
    `State change is not allowed for settlement '${s1}' in state 'PS_TRANSFERS_COMMITTED'`,
  );
  const settled = await hub.settleAll(s1, 'SETTLED');
  assert.equal(settled.body.state, 'SETTLED');
  const zero = (await hub.v2('GET', `/settlements/${s1}`)).body.participants
    .flatMap((p: any) => p.accounts)
    .find((a: any) => a.id === zAccount);
  assert.deepEqual(
    [zero.state, zero.netSettlementAmount.amount, await hub.positions('Z')],
    ['SETTLED', 0, ['0']],
    'the net-zero account went through every state, moving nothing',
  );
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['-30', '30', '25']);
  assert.equal((await hub.v2('GET', `/settlementWindows/${w1}`)).body.state, 'SETTLED');
  assert.deepEqual(
    (await Promise.all(['A', 'B', 'C'].map((s) => hub.position(s)))).map((p) => p.settlement),
    ['-5000', '-100000', '-600'],
  );
  const hubAccounts = (await hub.ok('GET', '/participants/Hub/accounts')).body as {
    ledgerAccountType: string;
    currency: string;
    value: number;
  }[];
  assert.equal(
    hubAccounts.find(
      (a) => a.ledgerAccountType === 'HUB_MULTILATERAL_SETTLEMENT' && a.currency === 'USD',
    )!.value,
    0,
  );

  // Headroom back: these pass now (then withdrawn, so window 2 keeps the reference's nets).
  for (const [payer, payee, amount] of [
    ['A', 'B', '700'],
    ['C', 'B', '300'],
  ] as const) {
    const passed = await hub.transfer(payer, payee, amount, 'none');
    assert.equal(passed.status, 201, `${payer}→${payee} ${amount} after S1`);
    await hub.finish(passed.id, payer, payee, 'abort', passed.fulfilment);
  }

  // S2 over window 2: reserve, abort (positions back, window ABORTED), then S3 over it again.
  const w3 = (
    await hub.v2('POST', `/settlementWindows/${w2}`, { state: 'CLOSED', reason: 'close 2' })
  ).body.settlementWindowId as number;
  const s2 = (
    await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'settle 2',
      settlementWindows: [{ id: w2 }],
    })
  ).body;
  const nets2 = new Map<number, unknown>(
    s2.participants.flatMap((p: any) =>
      p.accounts.map((a: any) => [a.id, a.netSettlementAmount.amount]),
    ),
  );
  assert.deepEqual([nets2.get(await accountOf('A')), nets2.get(await accountOf('B'))], [-30, 30]);
  assert.equal(nets2.size, 2, 'Z and C did not move in window 2: not listed');
  await hub.settleAll(s2.id, 'PS_TRANSFERS_RECORDED');
  await hub.settleAll(s2.id, 'PS_TRANSFERS_RESERVED');
  assert.deepEqual(await hub.positions('A', 'B'), ['0', '30']);
  const aborted = await hub.v2('PUT', `/settlements/${s2.id}`, {
    state: 'ABORTED',
    reason: 'wrong figures',
  });
  assert.deepEqual(aborted.body, { id: s2.id, state: 'ABORTED', reason: 'wrong figures' });
  assert.deepEqual(await hub.positions('A', 'B'), ['-30', '30']);
  assert.equal((await hub.v2('GET', `/settlementWindows/${w2}`)).body.state, 'ABORTED');
  const s3 = (
    await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'settle 2 again',
      settlementWindows: [{ id: w2 }],
    })
  ).body;
  for (const state of [
    'PS_TRANSFERS_RECORDED',
    'PS_TRANSFERS_RESERVED',
    'PS_TRANSFERS_COMMITTED',
    'SETTLED',
  ])
    await hub.settleAll(s3.id, state);
  assert.deepEqual(await hub.positions('A', 'B', 'C'), ['0', '0', '25']);
  assert.equal((await hub.v2('GET', `/settlementWindows/${w2}`)).body.state, 'SETTLED');

  // Queries as central-settlement has them.
  const byState = await hub.v2('GET', '/settlements?state=SETTLED');
  assert.deepEqual(
    byState.body
      .map((s: any) => s.id)
      .filter((id: number) => [s1, s2.id, s3.id].includes(id))
      .sort(),
    [s1, s3.id].sort(),
  );
  const byAccount = await hub.v2('GET', `/settlements?accountId=${await accountOf('C')}`);
  assert.deepEqual(
    byAccount.body.map((s: any) => s.id),
    [s1],
  );
  refusedWith(await hub.v2('GET', '/settlements'), '3100', 'Use at least one parameter');
  const participantView = await hub.v2(
    'GET',
    `/settlements/${s1}/participants/${participantOf(created.body, await accountOf('C'))}`,
  );
  assert.deepEqual(
    participantView.body.participants[0].accounts.map((a: any) => a.netSettlementAmount.amount),
    [350],
  );
  refusedWith(
    await hub.v2('GET', `/settlements/${s1}/participants/99999`),
    '3100',
    `Participant with ID '99999' is not part of settlement '${s1}'`,
  );
  refusedWith(
    await hub.v2('POST', `/settlementWindows/${w3}`, { state: 'CLOSED', reason: 'nothing' }),
    '3100',
    `Window ${w3} is empty`,
  );
}

/**
 * GROSS: no settlement can be created; each commit settles at once (liquidity moves, positions
 * back).
 */
export async function grossExample(hub: Hub): Promise<void> {
  await hub.onboardHub({ currency: 'EUR', gross: true });
  await hub.onboard('D', '1000', '1000', 'EUR');
  await hub.onboard('E', '1000', '1000', 'EUR');
  const prepared = await hub.transfer('D', 'E', '100', 'none', 'EUR');
  assert.equal(prepared.status, 201);
  // The commit is answered COMMITTED (central-ledger's callback); the transfer then reads SETTLED,
  // a duplicate fulfil too.
  const fulfil = (): Promise<Answer> =>
    hub.ok(
      'PUT',
      `/transfers/${prepared.id}`,
      {
        transferState: 'COMMITTED',
        fulfilment: prepared.fulfilment,
        completedTimestamp: '2026-01-01T00:00:00.000Z',
      },
      { 'fspiop-source': hub.name('E'), 'fspiop-destination': hub.name('D') },
    );
  assert.equal((await fulfil()).body.transferState, 'COMMITTED');
  assert.equal(await hub.transferState(prepared.id, 'D'), 'SETTLED');
  assert.equal((await fulfil()).body.transferState, 'SETTLED');
  const [d, e] = await Promise.all([hub.position('D'), hub.position('E')]);
  assert.deepEqual(
    [d, e],
    [
      { position: '0', settlement: '-900' },
      { position: '0', settlement: '-1100' },
    ],
  );
  const refused = await hub.v2('POST', '/settlements', {
    settlementModel: 'GROSSEUR',
    reason: 'r',
    settlementWindows: [{ id: await hub.openWindowId() }],
  });
  refusedWith(refused, '3100', 'Settlement can not be created for GROSS or IMMEDIATE models');

  // A window that saw only GROSS commits is not empty (central-ledger records the OPEN window in
  // every fulfilment, GROSS ones too): it closes as any other, with no content for a NET model.
  const grossOnly = await hub.openWindowId();
  const closed = await hub.v2('POST', `/settlementWindows/${grossOnly}`, {
    state: 'CLOSED',
    reason: 'gross only',
  });
  assert.equal(closed.status, 200, closed.text);
  assert.equal(closed.body.state, 'OPEN');
  const next = closed.body.settlementWindowId as number;
  assert.notEqual(next, grossOnly);
  const window = (await hub.v2('GET', `/settlementWindows/${grossOnly}`)).body;
  assert.deepEqual([window.state, window.content], ['CLOSED', []]);
  refusedWith(
    await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'r',
      settlementWindows: [{ id: grossOnly }],
    }),
    '3100',
    `Inapplicable windows ${grossOnly}`,
  );
  refusedWith(
    await hub.v2('POST', `/settlementWindows/${next}`, {
      state: 'CLOSED',
      reason: 'nothing since',
    }),
    '3100',
    `Window ${next} is empty`,
  );

  // D can spend its cap again at once: the headroom came back with the settlement.
  const spent = await hub.transfer('D', 'E', '900', 'commit', 'EUR');
  assert.equal(spent.status, 201);
  assert.equal(await hub.transferState(spent.id, 'E'), 'SETTLED');
  assert.deepEqual(await Promise.all([hub.position('D'), hub.position('E')]), [
    { position: '0', settlement: '0' },
    { position: '0', settlement: '-2000' },
  ]);

  // A window with GROSS and NET commits: its content and settlement are the NET currency's alone,
  // as before.
  assert.equal((await hub.transfer('A', 'B', '10', 'commit')).status, 201);
  const mixedClose = await hub.v2('POST', `/settlementWindows/${next}`, {
    state: 'CLOSED',
    reason: 'mixed',
  });
  assert.equal(mixedClose.status, 200, mixedClose.text);
  const mixed = (await hub.v2('GET', `/settlementWindows/${next}`)).body;
  assert.deepEqual(
    [mixed.state, mixed.content.map((c: any) => [c.ledgerAccountType, c.currencyId, c.state])],
    ['CLOSED', [['POSITION', 'USD', 'CLOSED']]],
  );
  const settlement = await hub.v2('POST', '/settlements', {
    settlementModel: 'DEFERREDNETUSD',
    reason: 'mixed',
    settlementWindows: [{ id: next }],
  });
  assert.equal(settlement.status, 200, settlement.text);
  const nets = settlement.body.participants.flatMap((p: any) =>
    p.accounts.map((a: any) => [
      a.id,
      a.netSettlementAmount.amount,
      a.netSettlementAmount.currency,
    ]),
  );
  assert.deepEqual(
    nets.sort(),
    [
      [await hub.accountId('A', 'POSITION'), 10, 'USD'],
      [await hub.accountId('B', 'POSITION'), -10, 'USD'],
    ].sort(),
  );
}

function participantOf(settlement: any, accountId: number): number {
  return settlement.participants.find((p: any) => p.accounts.some((a: any) => a.id === accountId))
    .id;
}
