/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self time by function, by file and by category
 * (JSON, crypto, schema validation, logging, Fastify, promise machinery, the ledger client, our
 * own modules, GC), and inclusive time of the heaviest functions. Time is the sum of the sample
 * intervals (timeDeltas), so it is wall time spent on the main thread.
 *
 *   npx tsx bench/profile-summary.ts bench/profiles/<file>.cpuprofile [--top 30] [--json out.json]
 *       [--window FROM:TO]   only samples FROM..TO ms before the profile's end
 */
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Row {
  name: string;
  ms: number;
  /** Share of the busy time (everything but idle). */
  share: number;
}

export interface ProfileSummary {
  file: string;
  wallMs: number;
  busyMs: number;
  idleMs: number;
  samples: number;
  window: ProfileWindow | undefined;
  byCategory: Row[];
  byFile: Row[];
  bySelf: Row[];
  byInclusive: Row[];
  ourInclusive: Row[];
  /**
   * Busy time charged to the nearest src/ function on the stack (its own and everything it called
   * that is not src/).
   */
  byNearestOwnFunction: Row[];
}

/**
 * Where a frame's code lives, shortened: node_modules/<pkg>/..., src/<module>.ts, node:..., or a V8
 * marker.
 */
function fileOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === '')
    return frame.functionName.startsWith('(') ? frame.functionName : '(native or generated code)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) return url.slice(modules + 1).replace(/^file:\/\//, '');
  const dist = url.indexOf('/dist/src/');
  if (dist >= 0) return `src/${url.slice(dist + '/dist/src/'.length).replace(/\.js$/, '.ts')}`;
  return url.replace(/^file:\/\//, '');
}

function packageOf(file: string): string | undefined {
  const match = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  return match?.[1];
}

/** The category a frame's self time counts under. */
export function categoryOf(frame: CallFrame, caller?: string): string {
  const name = frame.functionName;
  const file = fileOf(frame);
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'V8/native, unattributed (program)';
  const pkg = packageOf(file);
  if (pkg !== undefined) {
    if (pkg === 'tigerbeetle-node')
      return 'ledger client (tigerbeetle-node: submit converts JS objects to native events)';
    if (
      /^(pino|sonic-boom|pino-std-serializers|quick-format-unescaped|on-exit-leak-free|thread-stream|atomic-sleep|abstract-logging)$/.test(
        pkg,
      )
    )
      return 'logging (pino)';
    if (pkg === 'fast-json-stringify') return 'JSON serialize (fast-json-stringify)';
    if (pkg === 'secure-json-parse') return 'JSON parse (secure-json-parse)';
    if (/^(ajv|ajv-formats|fast-uri|json-schema-traverse)$/.test(pkg))
      return 'schema validation (ajv)';
    if (
      /^(fastify|find-my-way|avvio|light-my-request|fast-querystring|fast-decode-uri-component|@fastify\/.*|toad-cache|fastq|reusify|process-warning|safe-regex2|ret)$/.test(
        pkg,
      )
    )
      return 'Fastify core (routing, hooks, reply)';
    if (pkg === '@hapi/joi') return 'config validation (joi)';
    return `other package: ${pkg}`;
  }
  if (file.startsWith('src/')) return `our code: ${file}`;
  if (file.startsWith('node:internal/crypto') || file === 'node:crypto')
    return 'crypto (node:crypto, sha256)';
  if (
    /^node:(internal\/)?(streams?|net|_http|internal\/http|http|internal\/stream_base_commons|internal\/js_stream_socket|internal\/dns|internal\/tcp|internal\/net)/.test(
      file,
    ) ||
    file.includes('_http_')
  )
    return 'node http/net/streams';
  if (
    file.startsWith('node:internal/process/task_queues') ||
    file.startsWith('node:internal/async_hooks') ||
    name === 'processTicksAndRejections' ||
    name === 'runMicrotasks'
  )
    return 'promise/nextTick machinery';
  if (file.startsWith('node:internal/timers') || file === 'node:timers') return 'timers';
  if (file.startsWith('node:internal/buffer') || file === 'node:buffer') return 'Buffer';
  if (file === 'node:fs' || file.startsWith('node:internal/fs'))
    return 'node fs (file writes, fdatasync)';
  if (file.startsWith('node:'))
    return `node core: ${file.replace(/^node:(internal\/)?/, '').split('/')[0]}`;
  if (file === '(native or generated code)') {
    // V8 builtins, native bindings and code generated with new Function (Ajv validators,
    // fast-json-stringify serializers) have no url: Ajv's by name, the rest count where they
    // were called from (a socket writev under node:net is HTTP, a writeBuffer under fs.write is
    // the journal file, JSON.parse under secure-json-parse is body parsing).
    if (/^validate\d*$/.test(name)) return 'schema validation (ajv)';
    if (caller !== undefined) return caller;
    return `V8 builtin / generated: ${name || '(anonymous)'}`;
  }
  return `other: ${file}`;
}

function functionKey(frame: CallFrame): string {
  const file = fileOf(frame);
  const line = file.startsWith('src/')
    ? (originalLine(frame) ?? `js:${frame.lineNumber + 1}`)
    : frame.lineNumber + 1;
  return `${frame.functionName || '(anonymous)'}  ${file}${frame.url === '' ? '' : `:${line}`}`;
}

/** Generated line → [generated column, original line][] from a source map's mappings (VLQ). */
const sourceMaps = new Map<string, [number, number][][] | undefined>();

function decodeMappings(mappings: string): [number, number][][] {
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const lines: [number, number][][] = [];
  let originalLine = 0;
  for (const lineText of mappings.split(';')) {
    const segments: [number, number][] = [];
    let column = 0;
    for (const segment of lineText.split(',')) {
      if (segment === '') continue;
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of segment) {
        const digit = B64.indexOf(ch);
        value += (digit & 31) << shift;
        if ((digit & 32) !== 0) {
          shift += 5;
        } else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += values[0] ?? 0;
      if (values.length >= 4) {
        originalLine += values[2]!;
        segments.push([column, originalLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

/** The TypeScript line (1-based) of a frame in dist/src, through the .js.map beside it. */
function originalLine(frame: CallFrame): number | undefined {
  const file = frame.url.replace(/^file:\/\//, '');
  if (!sourceMaps.has(file)) {
    try {
      sourceMaps.set(
        file,
        decodeMappings(
          (JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as { mappings: string }).mappings,
        ),
      );
    } catch {
      sourceMaps.set(file, undefined);
    }
  }
  const segments = sourceMaps.get(file)?.[frame.lineNumber];
  if (segments === undefined || segments.length === 0) return undefined;
  let best = segments[0]!;
  for (const segment of segments) if (segment[0] <= frame.columnNumber) best = segment;
  return best[1] + 1;
}

/**
 * A window of the profile, in ms before its end (the process's exit): samples taken between
 * `fromMsBeforeEnd` and `toMsBeforeEnd` before the end count, the rest (start-up, onboarding,
 * checks) not.
 */
export interface ProfileWindow {
  fromMsBeforeEnd: number;
  toMsBeforeEnd: number;
}

export function summariseProfile(file: string, top = 30, window?: ProfileWindow): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) byId.set(node.id, node);
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);

  const selfMs = new Map<number, number>();
  let timestamp = profile.startTime;
  let counted = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    timestamp += profile.timeDeltas[i] ?? 0;
    if (window !== undefined) {
      const beforeEndMs = (profile.endTime - timestamp) / 1000;
      if (beforeEndMs > window.fromMsBeforeEnd || beforeEndMs < window.toMsBeforeEnd) continue;
    }
    counted++;
    const id = profile.samples[i]!;
    selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }

  const add = (map: Map<string, number>, key: string, value: number): void => {
    map.set(key, (map.get(key) ?? 0) + value);
  };
  const categories = new Map<string, number>();
  const files = new Map<string, number>();
  const functions = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const nearestOwn = new Map<string, number>();
  let idleMs = 0;
  let wallMs = 0;
  // The distinct functions on each node's stack, for inclusive time (recursion counted once).
  const stackKeys = new Map<number, string[]>();
  const keysOf = (id: number): string[] => {
    const cached = stackKeys.get(id);
    if (cached !== undefined) return cached;
    const node = byId.get(id)!;
    const up = parent.get(id);
    const above = up === undefined ? [] : keysOf(up);
    const key = functionKey(node.callFrame);
    const keys =
      node.callFrame.functionName === '(root)' || above.includes(key) ? above : [...above, key];
    stackKeys.set(id, keys);
    return keys;
  };

  /** The category of the nearest ancestor frame that has a url (for native frames). */
  const callerCategory = (id: number): string | undefined => {
    for (let up = parent.get(id); up !== undefined; up = parent.get(up)) {
      const frame = byId.get(up)!.callFrame;
      if (frame.url !== '') return categoryOf(frame);
    }
    return undefined;
  };
  for (const [id, ms] of selfMs) {
    const frame = byId.get(id)!.callFrame;
    wallMs += ms;
    const category = categoryOf(
      frame,
      frame.url === '' && !frame.functionName.startsWith('(') ? callerCategory(id) : undefined,
    );
    if (category === 'idle') {
      idleMs += ms;
      continue;
    }
    add(categories, category, ms);
    add(files, fileOf(frame), ms);
    add(functions, functionKey(frame), ms);
    for (const key of keysOf(id)) add(inclusive, key, ms);
    let owner = '(no src/ frame: HTTP, Fastify, event loop, GC)';
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (fileOf(f).startsWith('src/')) {
        owner = functionKey(f);
        break;
      }
    }
    add(nearestOwn, owner, ms);
  }
  const busyMs = wallMs - idleMs;
  const rows = (
    map: Map<string, number>,
    limit: number,
    filter: (key: string) => boolean = () => true,
  ): Row[] =>
    [...map.entries()]
      .filter(([key]) => filter(key))
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, ms]) => ({ name, ms, share: ms / busyMs }));

  return {
    file,
    wallMs,
    busyMs,
    idleMs,
    samples: counted,
    window,
    byCategory: rows(categories, 60),
    byFile: rows(files, top),
    bySelf: rows(functions, top),
    byInclusive: rows(inclusive, top, (key) => !/^\((root|program|garbage collector)\)/.test(key)),
    ourInclusive: rows(inclusive, top, (key) => / src\//.test(key)),
    byNearestOwnFunction: rows(nearestOwn, top),
  };
}

export function formatSummary(summary: ProfileSummary): string {
  const section = (title: string, rows: Row[]): string =>
    [
      `${title}`,
      ...rows.map(
        (r) =>
          `  ${r.ms.toFixed(0).padStart(7)} ms ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}`,
      ),
    ].join('\n');
  return [
    `profile ${path.basename(summary.file)}${summary.window === undefined ? '' : ` (window ${(summary.window.fromMsBeforeEnd / 1000).toFixed(1)} s to ${(summary.window.toMsBeforeEnd / 1000).toFixed(1)} s before exit)`}: ${summary.samples} samples, main thread ${summary.wallMs.toFixed(0)} ms, busy ${summary.busyMs.toFixed(0)} ms (${((summary.busyMs / summary.wallMs) * 100).toFixed(1)}%), idle ${summary.idleMs.toFixed(0)} ms; shares below are of busy time`,
    section('\nself time by category', summary.byCategory),
    section('\nself time by file', summary.byFile),
    section('\nself time by function', summary.bySelf),
    section('\ninclusive time by function (all)', summary.byInclusive),
    section('\ninclusive time by function (src/ only)', summary.ourInclusive),
    section(
      '\nbusy time by the nearest src/ function on the stack (its own time and all library, node and native time below it)',
      summary.byNearestOwnFunction,
    ),
  ].join('\n');
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const file = args.find((a) => a.endsWith('.cpuprofile'));
  if (file === undefined) {
    process.stderr.write(
      'usage: tsx bench/profile-summary.ts <file.cpuprofile> [--top N] [--json out.json] [--window FROM:TO]\n',
    );
    process.exit(2);
  }
  const topIndex = args.indexOf('--top');
  const windowIndex = args.indexOf('--window');
  const [from, to] = windowIndex >= 0 ? args[windowIndex + 1]!.split(':').map(Number) : [];
  const summary = summariseProfile(
    file,
    topIndex >= 0 ? Number(args[topIndex + 1]) : 30,
    from === undefined ? undefined : { fromMsBeforeEnd: from, toMsBeforeEnd: to ?? 0 },
  );
  process.stdout.write(`${formatSummary(summary)}\n`);
  const jsonIndex = args.indexOf('--json');
  if (jsonIndex >= 0) fs.writeFileSync(args[jsonIndex + 1]!, JSON.stringify(summary, null, 2));
}
