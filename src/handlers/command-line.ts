/**
 * The handler command line of central-ledger (`node src/handlers/index.js handler|h --prepare …`,
 * as the Mojaloop charts run it) and of central-settlement (`… h --deferredSettlement`), read into
 * the roles of the process: the transfer topics its flags name are consumed, `--timeout` sweeps
 * the expiries; a handler whose work is done here by the ledger or another process is accepted,
 * and the log says so. The bulk handlers consume bulk-api-adapter's topics where an object store
 * is configured (app.ts says at start whether bulk transfers are on).
 */
import { ConfigError, type Config, type ConsumedTopic } from '../config/config';
import type { MojaloopService } from '../config/mojaloop';

const COMMANDS = new Set(['handler', 'h']);

/** central-ledger's handlers of the transfer topics consumed here. */
const TOPIC_FLAGS: Readonly<Record<string, ConsumedTopic>> = {
  '--prepare': 'prepare',
  '--fulfil': 'fulfil',
  '--get': 'get',
  '--bulkprepare': 'bulkPrepare',
  '--bulkfulfil': 'bulkFulfil',
  '--bulkget': 'bulkGet',
};
const TIMEOUT_FLAG = '--timeout';

const POSITIONS = 'positions move in the ledger with each prepare and fulfil';
const SETTLEMENT = 'windows close and settlements run in the settlement API process and the ledger';
/** Handlers with nothing of their own to do here, and why, per service. */
const DONE_ELSEWHERE: Readonly<Record<MojaloopService, Readonly<Record<string, string>>>> = {
  'central-ledger': {
    '--position': POSITIONS,
    '--positionbatch': POSITIONS,
    '--admin': "funds in and out are recorded by the API process's admin routes",
    '--bulkprocessing':
      "a bulk's results are gathered as its transfers are prepared and fulfilled, by the bulk " +
      'prepare and fulfil handlers',
  },
  'central-settlement': {
    '--deferredSettlement': SETTLEMENT,
    '--grossSettlement': SETTLEMENT,
    '--rules': SETTLEMENT,
  },
};

export interface HandlerProcess {
  roles: Config['roles'];
  /** What to log at start: each accepted handler with nothing of its own to do here. */
  notes: string[];
}

/**
 * The roles of a handler process of `service` started with `args` (the command line after the
 * script). A command line central-ledger (central-settlement) would not take is a ConfigError
 * with the usage.
 */
export function handlerProcess(args: readonly string[], service: MojaloopService): HandlerProcess {
  const [command, ...flags] = args;
  const elsewhere = DONE_ELSEWHERE[service];
  const known = (flag: string): boolean =>
    flag in elsewhere ||
    (service === 'central-ledger' && (flag in TOPIC_FLAGS || flag === TIMEOUT_FLAG));
  if (command === undefined || !COMMANDS.has(command))
    throw new ConfigError(usage(service, command === undefined ? 'no command' : command));
  const unknown = flags.filter((flag) => !known(flag));
  if (unknown.length > 0) throw new ConfigError(usage(service, unknown.join(' ')));
  const consume = [...new Set(flags.flatMap((flag) => TOPIC_FLAGS[flag] ?? []))];
  const notes = [...new Set(flags)]
    .filter((flag) => flag in elsewhere)
    .map((flag) => `${flag}: nothing of its own to do here (${elsewhere[flag]})`);
  if (flags.length === 0) notes.push('no handler flags: this process only answers /health');
  return {
    roles: { api: false, settlementApi: false, consume, expirySweep: flags.includes(TIMEOUT_FLAG) },
    notes,
  };
}

function usage(service: MojaloopService, refused: string): string {
  const flags =
    service === 'central-ledger'
      ? [...Object.keys(TOPIC_FLAGS), TIMEOUT_FLAG, ...Object.keys(DONE_ELSEWHERE[service])]
      : Object.keys(DONE_ELSEWHERE[service]);
  return (
    `${refused}: not a ${service} handler command line\n` +
    `usage: node src/handlers/index.js handler|h ${flags.map((flag) => `[${flag}]`).join(' ')}`
  );
}
