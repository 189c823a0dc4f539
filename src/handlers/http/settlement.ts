/**
 * central-settlement's v2 API (`/settlementWindows`, `/settlements`, registered under its `/v2`
 * prefix), with its validation codes: a missing required field 3102, a wrong type or enum value
 * 3101, other refusals 3100; an unknown window 2001 (HTTP 500) as central-settlement answers it.
 * Success is always 200. Also its /v2/health, answering as /health does (central-settlement's
 * probe).
 */
import type { FastifyPluginAsync, FastifyReply, RouteHandlerMethod } from 'fastify';
import { FspiopCode, FspiopError, validationError } from '../../domain/shared/errors';
import type {
  SettlementAccountRecord,
  SettlementRecord,
  SettlementState,
} from '../../ports/metadata';
import { stringifyExact } from './exact-json';
import { ACCOUNT_STATES } from '../../domain/settlement/rules';
import type { AccountChange, SettlementService } from '../../domain/settlement/settlements';
import {
  accountView,
  participantsView,
  settlementView,
  settlementWindowsView,
  windowView,
} from './settlement-views';
import type { WindowService } from '../../domain/settlement/windows';

const WINDOW_STATES = ['OPEN', 'CLOSED', 'PENDING_SETTLEMENT', 'SETTLED', 'ABORTED'];
const SETTLEMENT_STATES = [
  'PENDING_SETTLEMENT',
  'PS_TRANSFERS_RECORDED',
  'PS_TRANSFERS_RESERVED',
  'PS_TRANSFERS_COMMITTED',
  'SETTLING',
  'SETTLED',
  'ABORTED',
];
const WINDOW_FILTERS = ['participantId', 'state', 'fromDateTime', 'toDateTime', 'currency'];
const SETTLEMENT_FILTERS = [
  'state',
  'fromDateTime',
  'toDateTime',
  'currency',
  'settlementWindowId',
  'fromSettlementWindowDateTime',
  'toSettlementWindowDateTime',
  'participantId',
  'accountId',
];
/** The longest reason or external reference taken (central-ledger's columns are 512 characters). */
const MAX_TEXT = 512;

type Body = Record<string, unknown>;

/**
 * Success answers for the OpenAPI document (handlers/responses.ts attaches the errors); replies are
 * written by stringifyExact.
 */
const string = { type: 'string' };
const id = { type: 'integer' };
const content = {
  type: 'object',
  properties: {
    id,
    state: string,
    ledgerAccountType: string,
    currencyId: string,
    createdDate: string,
    changedDate: string,
    settlementId: { type: ['integer', 'null'] },
  },
};
const windowSchema = {
  type: 'object',
  properties: {
    settlementWindowId: id,
    state: string,
    reason: string,
    createdDate: string,
    changedDate: string,
    content: { type: 'array', items: content },
  },
};
const account = {
  type: 'object',
  properties: {
    id,
    state: string,
    reason: string,
    externalReference: string,
    netSettlementAmount: {
      type: 'object',
      properties: { amount: { type: 'number' }, currency: string },
    },
    errorInformation: { type: 'object' },
  },
};
const settlementSchema = {
  type: 'object',
  properties: {
    id,
    state: string,
    reason: string,
    createdDate: string,
    changedDate: string,
    settlementModel: string,
    settlementWindows: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id,
          state: string,
          reason: string,
          createdDate: string,
          changedDate: string,
          content: { type: 'array', items: content },
        },
      },
    },
    participants: {
      type: 'array',
      items: { type: 'object', properties: { id, accounts: { type: 'array', items: account } } },
    },
  },
};
const answers = (schema: object): { schema: { response: { 200: object } } } => ({
  schema: { response: { 200: schema } },
});

export interface SettlementRoutesOptions {
  windows: WindowService;
  settlements: SettlementService;
  /** /health's answer (health.ts, healthAnswer), served at /health under the prefix. */
  health: RouteHandlerMethod;
}

export const settlementRoutes: FastifyPluginAsync<SettlementRoutesOptions> = async (
  app,
  { windows, settlements, health },
) => {
  app.get('/health', health);

  const send = (reply: FastifyReply, body: unknown): FastifyReply =>
    reply.status(200).type('application/json; charset=utf-8').send(stringifyExact(body));
  const withWindows = async (
    s: SettlementRecord,
    accounts?: SettlementAccountRecord[],
  ): Promise<object> => settlementView(s, await windows.windowsOf(s.windowIds), accounts);

  app.get(
    '/settlementWindows',
    answers({ type: 'array', items: windowSchema }),
    async (request, reply) => {
      const query = filters(request.query, WINDOW_FILTERS);
      const participantId = optionalInt(query, 'participantId');
      const state = optionalEnum(query, 'state', WINDOW_STATES);
      const found = (await windows.list()).filter(
        (w) =>
          (state === undefined || w.state === state) &&
          (query.currency === undefined || w.content.some((c) => c.currency === query.currency)) &&
          (participantId === undefined ||
            w.content.some((c) => c.nets.some((n) => n.participantId === participantId))) &&
          within(w.createdDate, query.fromDateTime, query.toDateTime),
      );
      if (found.length === 0)
        throw validationError(
          `settlementWindow by filters: ${JSON.stringify(query).replace(/"/g, '')} not found`,
        );
      return send(
        reply,
        found
          .sort((a, b) => b.changedDate.localeCompare(a.changedDate) || b.id - a.id)
          .map(windowView),
      );
    },
  );

  app.get('/settlementWindows/:id', answers(windowSchema), async (request, reply) =>
    send(reply, windowView(await windows.get(pathInt(request.params, 'id')))),
  );

  app.post('/settlementWindows/:id', answers(windowSchema), async (request, reply) => {
    const id = pathInt(request.params, 'id');
    const body = object(request.body);
    required(body, 'state', 'reason');
    if (body.state !== 'CLOSED')
      throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, '"state" must be [CLOSED]');
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string',
      ),
    );
    return send(reply, windowView(await windows.close(id, text(body, 'reason'), headers)));
  });

  app.get(
    '/settlements',
    answers({ type: 'array', items: settlementSchema }),
    async (request, reply) => {
      const query = filters(request.query, SETTLEMENT_FILTERS);
      const participantId = optionalInt(query, 'participantId');
      const accountId = optionalInt(query, 'accountId');
      const windowId = optionalInt(query, 'settlementWindowId');
      const state = optionalEnum(query, 'state', SETTLEMENT_STATES);
      // The settlement's own fields first; the windows of those left are read in one request.
      const candidates = (await settlements.list()).flatMap((s) => {
        const accounts = s.accounts.filter(
          (a) =>
            (participantId === undefined || a.participantId === participantId) &&
            (accountId === undefined || a.accountId === accountId) &&
            (query.currency === undefined || a.currency === query.currency),
        );
        const matches =
          accounts.length > 0 &&
          (state === undefined || s.state === state) &&
          within(s.createdDate, query.fromDateTime, query.toDateTime) &&
          (windowId === undefined || s.windowIds.includes(windowId));
        return matches ? [{ settlement: s, accounts }] : [];
      });
      const windowsById = new Map(
        (
          await windows.windowsOf([...new Set(candidates.flatMap((c) => c.settlement.windowIds))])
        ).map((w) => [w.id, w]),
      );
      const answers: object[] = [];
      for (const { settlement, accounts } of candidates) {
        const settlementWindows = [...settlement.windowIds]
          .sort((a, b) => a - b)
          .flatMap((id) => windowsById.get(id) ?? []); // in id order, as windowsOf answers
        if (
          settlementWindows.some((w) =>
            within(
              w.createdDate,
              query.fromSettlementWindowDateTime,
              query.toSettlementWindowDateTime,
            ),
          )
        )
          answers.push(settlementView(settlement, settlementWindows, accounts));
      }
      if (answers.length === 0)
        throw validationError(
          `No settlements found matching the provided parameters: ${JSON.stringify(query)}`,
        );
      return send(reply, answers);
    },
  );

  app.post('/settlements', answers(settlementSchema), async (request, reply) => {
    const body = object(request.body);
    required(body, 'settlementModel', 'reason', 'settlementWindows');
    if (!Array.isArray(body.settlementWindows))
      throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, '"settlementWindows" must be an array');
    if (body.settlementWindows.length === 0)
      throw validationError('"settlementWindows" must contain at least 1 items');
    const ids = body.settlementWindows.map((w) => pathInt(object(w), 'id'));
    if (new Set(ids).size !== ids.length)
      throw validationError('"settlementWindows" contains a duplicate value');
    const created = await settlements.create({
      settlementModel: text(body, 'settlementModel'),
      reason: text(body, 'reason'),
      settlementWindows: ids.map((id) => ({ id })),
    });
    return send(reply, { ...(await withWindows(created)), settlementModel: created.model });
  });

  app.get('/settlements/:id', answers(settlementSchema), async (request, reply) =>
    send(reply, await withWindows(await settlements.get(pathInt(request.params, 'id')))),
  );

  app.put('/settlements/:id', answers(settlementSchema), async (request, reply) => {
    const id = pathInt(request.params, 'id');
    const body = object(request.body);
    if (body.participants !== undefined) {
      if (
        body.state !== undefined ||
        body.reason !== undefined ||
        body.externalReference !== undefined
      )
        throw validationError('No other properties are allowed when participants is provided');
      if (!Array.isArray(body.participants))
        throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, '"participants" must be an array');
      const participants = body.participants.map((p) => {
        const participant = object(p);
        required(participant, 'id', 'accounts');
        return { id: pathInt(participant, 'id'), accounts: accountChanges(participant.accounts) };
      });
      return send(reply, await changeAnswer(settlements, windows, id, participants));
    }
    if (body.state === undefined || body.reason === undefined)
      throw new FspiopError(FspiopCode.MISSING_ELEMENT, 'State and reason are mandatory');
    // central-settlement's schema admits ABORTED and INVALID (anything else is malformed: 3101);
    // its handler refuses INVALID.
    if (optionalEnum(body, 'state', ['ABORTED', 'INVALID']) !== 'ABORTED')
      throw validationError('Invalid request payload input');
    const aborted = await settlements.abort(
      id,
      text(body, 'reason'),
      body.externalReference === undefined ? undefined : text(body, 'externalReference'),
    );
    return send(reply, { id: aborted.id, state: aborted.state, reason: aborted.reason });
  });

  // The settlement restricted to one participant, or to one of its accounts.
  for (const url of [
    '/settlements/:sid/participants/:pid',
    '/settlements/:sid/participants/:pid/accounts/:aid',
  ]) {
    app.get(url, answers(settlementSchema), async (request, reply) => {
      const { settlement, accounts } = await scoped(settlements, request.params);
      return send(reply, scopedView(settlement, accounts));
    });
  }

  app.put(
    '/settlements/:sid/participants/:pid',
    answers(settlementSchema),
    async (request, reply) => {
      const sid = pathInt(request.params, 'sid');
      const body = object(request.body);
      required(body, 'accounts');
      return send(
        reply,
        await changeAnswer(settlements, windows, sid, [
          { id: pathInt(request.params, 'pid'), accounts: accountChanges(body.accounts) },
        ]),
      );
    },
  );

  app.put(
    '/settlements/:sid/participants/:pid/accounts/:aid',
    answers(settlementSchema),
    async (request, reply) => {
      const sid = pathInt(request.params, 'sid');
      const body = object(request.body);
      const [change] = accountChanges([{ ...body, id: pathInt(request.params, 'aid') }]);
      return send(
        reply,
        await changeAnswer(settlements, windows, sid, [
          { id: pathInt(request.params, 'pid'), accounts: [change!] },
        ]),
      );
    },
  );
};

/** central-settlement fills these windows from a table nothing writes: always []. */
function scopedView(
  settlement: SettlementRecord,
  accounts: readonly SettlementAccountRecord[],
): object {
  return {
    id: settlement.id,
    state: settlement.state,
    settlementWindows: [],
    participants: participantsView(accounts),
  };
}

/** PUT's answer: the settlement, with only the request's accounts, each changed or with why not. */
async function changeAnswer(
  settlements: SettlementService,
  windows: WindowService,
  id: number,
  participants: { id: number; accounts: AccountChange[] }[],
): Promise<object> {
  const { settlement, results } = await settlements.changeAccounts(id, participants);
  return {
    id: settlement.id,
    state: settlement.state,
    createdDate: settlement.createdDate,
    settlementWindows: settlementWindowsView(
      settlement.id,
      await windows.windowsOf(settlement.windowIds),
    ),
    participants: results.map((p) => ({
      id: p.participantId,
      accounts: p.results.map((r) =>
        'account' in r
          ? accountView(r.account, 'change')
          : { id: r.id, errorInformation: r.error.toErrorInformation() },
      ),
    })),
  };
}

/**
 * The settlement restricted to one participant (and one of its accounts), refused as
 * central-settlement words it.
 */
async function scoped(
  settlements: SettlementService,
  params: unknown,
): Promise<{ settlement: SettlementRecord; accounts: SettlementAccountRecord[] }> {
  const sid = pathInt(params, 'sid');
  const pid = pathInt(params, 'pid');
  const aid = (params as Body).aid === undefined ? undefined : pathInt(params, 'aid');
  const settlement = await settlements.get(sid);
  const accounts = settlement.accounts.filter((a) => a.participantId === pid);
  if (accounts.length === 0)
    throw validationError(`Participant with ID '${pid}' is not part of settlement '${sid}'`);
  if (aid === undefined) return { settlement, accounts };
  const account = settlement.accounts.find((a) => a.accountId === aid);
  if (account === undefined)
    throw validationError(`Account ID '${aid}' is not part of settlement '${sid}'`);
  if (account.participantId !== pid)
    throw validationError(
      `Provided account ID '${aid}' does not match any position account for participant '${pid}'`,
    );
  return { settlement, accounts: [account] };
}

function accountChanges(value: unknown): AccountChange[] {
  if (!Array.isArray(value))
    throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, '"accounts" must be an array');
  return value.map((item) => {
    const account = object(item);
    required(account, 'id', 'state', 'reason');
    const state = optionalEnum(account, 'state', ACCOUNT_STATES) as SettlementState;
    return {
      id: pathInt(account, 'id'),
      state,
      reason: text(account, 'reason'),
      ...(account.externalReference === undefined
        ? {}
        : { externalReference: text(account, 'externalReference') }),
    };
  });
}

function object(value: unknown): Body {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, 'Invalid request payload input');
  return value as Body;
}

function required(body: Body, ...keys: string[]): void {
  const missing = keys.find((key) => body[key] === undefined);
  if (missing !== undefined)
    throw new FspiopError(FspiopCode.MISSING_ELEMENT, `"${missing}" is required`);
}

function text(body: Body, key: string): string {
  const value = body[key];
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TEXT)
    throw new FspiopError(
      FspiopCode.MALFORMED_SYNTAX,
      `"${key}" must be a string of 1 to ${MAX_TEXT} characters`,
    );
  return value;
}

/** An integer id from a path, a query or a body (numbers or digit strings). */
function pathInt(holder: unknown, key: string): number {
  const value = (holder as Body)[key];
  const digits = typeof value === 'number' ? String(value) : value;
  if (typeof digits !== 'string' || !/^\d{1,15}$/.test(digits))
    throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, `"${key}" must be an integer`);
  return Number(digits);
}

function optionalInt(query: Record<string, string | undefined>, key: string): number | undefined {
  return query[key] === undefined ? undefined : pathInt(query, key);
}

function optionalEnum(
  holder: Record<string, unknown>,
  key: string,
  values: readonly string[],
): string | undefined {
  const value = holder[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !values.includes(value))
    throw new FspiopError(
      FspiopCode.MALFORMED_SYNTAX,
      `"${key}" must be one of [${values.join(', ')}]`,
    );
  return value;
}

/** The query's known filters; at least one, as central-settlement requires. */
function filters(query: unknown, known: readonly string[]): Record<string, string | undefined> {
  const given = Object.fromEntries(
    Object.entries((query ?? {}) as Record<string, unknown>)
      .filter(([key, value]) => known.includes(key) && value !== undefined)
      .map(([key, value]) => [key, String(value)]),
  );
  if (Object.keys(given).length === 0)
    throw validationError(`Use at least one parameter: ${known.join(', ')}`);
  for (const key of [
    'fromDateTime',
    'toDateTime',
    'fromSettlementWindowDateTime',
    'toSettlementWindowDateTime',
  ]) {
    if (given[key] !== undefined && Number.isNaN(Date.parse(given[key]!)))
      throw new FspiopError(FspiopCode.MALFORMED_SYNTAX, `"${key}" must be a valid date`);
  }
  return given;
}

function within(date: string, from: string | undefined, to: string | undefined): boolean {
  const at = Date.parse(date);
  return (
    (from === undefined || at >= Date.parse(from)) && (to === undefined || at <= Date.parse(to))
  );
}
