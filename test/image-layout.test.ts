/**
 * The image's /opt/app, without a container engine (none runs on these machines):
 *
 *  - `npm run build` lays out dist/ as the Dockerfile's runtime stage lays out /opt/app;
 *  - a copy of it laid out as that stage does (`npm ci --omit=dev` from the generated lock, or
 *    the repository's node_modules when npm's cache cannot serve it offline) runs the commands
 *    the image is started with: its own CMD on our variables, and Mojaloop's charts' `npm run
 *    migrate` and `node src/api/index.js` on a central-ledger-format config/default.json put
 *    where the charts mount theirs, over MariaDB;
 *  - each process runs as the charts run it: uid 1001, the root file system read-only and
 *    DATA_DIR alone writable (a private mount namespace; as root only: otherwise the copy alone
 *    is read-only, said loudly).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { migrationSource } from '../src/metadata/migrations';
import { IMAGE_SCRIPTS, type PackageLock, type PackageManifest } from '../scripts/build';
import { readDockerfile, stageCommand, stageEnvironment, stageWorkdir } from './support/dockerfile';
import { liveDirs, stopChild, track } from './support/leftovers';
import { useMariaDb } from './support/mariadb';
import { freePort } from './support/net';
import { tail } from './support/service-process';

const ROOT = resolve(__dirname, '..');
/** The uid and gid Mojaloop's charts run their containers as (runAsUser). */
const CHART_UID = 1001;
const RUNTIME = readDockerfile(ROOT).stages[1]!;
const IMAGE_DIR = stageWorkdir(RUNTIME);

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

function loudNote(message: string): void {
  process.stderr.write(`\n*** ${message} ***\n\n`);
}

/**
 * How a process is confined like the image's: a mount namespace where / is read-only but for
 * the given directories, as uid 1001; or, where that cannot be had, the copy made read-only.
 */
const namespaceUnavailable = ((): string | undefined => {
  if (process.getuid?.() !== 0) return 'not root';
  const probe = spawnSync('unshare', [
    '-m',
    'sh',
    '-c',
    `mount -o remount,bind,ro / && setpriv --reuid=${CHART_UID} --regid=${CHART_UID} --clear-groups true`,
  ]);
  return probe.status === 0 ? undefined : 'unshare -m / mount / setpriv refused';
})();

/** argv for `args` confined: read-only but for `writable`, as the charts' uid. */
function confined(args: string[], writable: string[]): string[] {
  if (namespaceUnavailable !== undefined) return args;
  for (const dir of writable) assert.doesNotMatch(dir, /'/);
  const mounts = writable.map((dir) => `mount --bind '${dir}' '${dir}' && `).join('');
  const ids = `--reuid=${CHART_UID} --regid=${CHART_UID} --clear-groups`;
  const script = `${mounts}mount -o remount,bind,ro / && exec setpriv ${ids} "$@"`;
  return ['unshare', '-m', 'sh', '-c', script, 'sh', ...args];
}

function run(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(args[0]!, args.slice(1), {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 180_000,
  });
  if (result.error !== undefined) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Health {
  services: { name: string; status: string }[];
}

/**
 * Starts `command` in the copy as the image would (confined, DATA_DIR writable), waits until
 * GET http://127.0.0.1:port/health answers 200, stops it and returns that answer.
 */
async function healthWhenServing(
  command: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; port: number; writable: string; logFile: string },
): Promise<Health> {
  const args = confined(command, [options.writable]);
  const out = openSync(options.logFile, 'a');
  const child = track(
    spawn(args[0]!, args.slice(1), {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', out, out],
    }),
  );
  closeSync(out);
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${command.join(' ')} exited:\n${tail(options.logFile)}`);
      try {
        const response = await fetch(`http://127.0.0.1:${options.port}/health`);
        if (response.ok) return (await response.json()) as Health;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`${command.join(' ')}: no /health after 60 s:\n${tail(options.logFile)}`);
      await new Promise((done) => setTimeout(done, 200));
    }
  } finally {
    await stopChild(child, 10_000);
  }
}

describe('the image layout: `npm run build` lays out dist/ as /opt/app', () => {
  const work = mkdtempSync(join(tmpdir(), 'image-layout-'));
  liveDirs.add(work);
  chmodSync(work, 0o755); // the charts' uid must reach the copy
  const dist = join(work, 'dist');
  /** The copy laid out as the runtime stage lays out /opt/app. */
  const app = join(work, 'opt-app');
  const data = join(app, 'data');
  const rootManifest = readJson<PackageManifest>(join(ROOT, 'package.json'));

  before(() => {
    const built = run(['npm', 'run', 'build', '--', '--out-dir', dist], { cwd: ROOT });
    assert.equal(built.status, 0, built.stdout + built.stderr);
  });

  after(() => {
    // A read-only copy cannot be removed by a non-root owner until it is writable again.
    if (existsSync(app)) spawnSync('chmod', ['-R', 'u+w', app]);
    rmSync(work, { recursive: true, force: true });
  });

  test('dist/: compiled src, config/default.json, the image manifest and its lock', () => {
    const entryPoints = [
      'src/main.js',
      'src/api/index.js',
      'src/handlers/index.js',
      'src/metadata/migrate-cli.js',
    ];
    for (const file of entryPoints) assert.ok(existsSync(join(dist, file)), `dist/${file}`);
    assert.deepEqual(readdirSync(dist).sort(), [
      'config',
      'package-lock.json',
      'package.json',
      'src',
    ]);
    assert.deepEqual(readdirSync(join(dist, 'config')), ['default.json']);
    assert.equal(
      readFileSync(join(dist, 'config', 'default.json'), 'utf8'),
      readFileSync(join(ROOT, 'config', 'default.json'), 'utf8'),
    );

    const manifest = readJson<PackageManifest>(join(dist, 'package.json'));
    assert.equal(manifest.name, rootManifest.name);
    assert.equal(manifest.version, rootManifest.version);
    assert.deepEqual(manifest.dependencies, rootManifest.dependencies);
    assert.deepEqual(manifest.overrides, rootManifest.overrides);
    assert.equal(manifest.devDependencies, undefined);
    assert.deepEqual(manifest.scripts, {
      start: 'node src/api/index.js',
      migrate: 'node src/metadata/migrate-cli.js',
      'migrate:ledger': 'node src/migrate-ledger.js',
    });
    assert.deepEqual(manifest.scripts, IMAGE_SCRIPTS);
    for (const script of Object.values(manifest.scripts!))
      assert.ok(existsSync(join(dist, script.split(' ')[1]!)), `${script}: the file is there`);

    // The root's lock less what only development needs; every other entry as the root has it.
    const rootLock = readJson<PackageLock>(join(ROOT, 'package-lock.json'));
    const lock = readJson<PackageLock>(join(dist, 'package-lock.json'));
    assert.equal(lock.lockfileVersion, rootLock.lockfileVersion);
    const { devDependencies: _dev, ...rootEntry } = rootLock.packages['']!;
    assert.deepEqual(lock.packages[''], rootEntry);
    for (const [path, entry] of Object.entries(rootLock.packages)) {
      if (path === '') continue;
      if (entry.dev === true) assert.ok(!(path in lock.packages), `${path} is development-only`);
      else assert.deepEqual(lock.packages[path], entry, path);
    }
    for (const name of Object.keys(manifest.dependencies))
      assert.ok(`node_modules/${name}` in lock.packages, `${name} is locked`);
    const tree = run(['npm', 'ls', '--omit=dev', '--package-lock-only', '--all'], { cwd: dist });
    assert.equal(tree.status, 0, `the lock holds every production dependency:\n${tree.stdout}`);
  });

  /**
   * Lays out the copy once: dist/, its production dependencies, data/ the charts' uid's; then
   * everything but data/ read-only, as the image's files are to that uid.
   */
  let laidOut = false;
  function layOutApp(): void {
    if (laidOut) return;
    laidOut = true;
    cpSync(dist, app, { recursive: true });
    const installed = run(['npm', 'ci', '--omit=dev', '--offline', '--no-audit', '--no-fund'], {
      cwd: app,
    });
    if (installed.status !== 0) {
      assert.match(installed.stdout + installed.stderr, /ENOTCACHED/, installed.stderr);
      loudNote(
        "npm's cache cannot install dist/package-lock.json offline: the copy uses the repository's node_modules",
      );
      rmSync(join(app, 'node_modules'), { recursive: true, force: true });
      // Its real place: the charts' uid may not reach the checkout's own directory.
      symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(app, 'node_modules'));
    }
    mkdirSync(data);
    if (namespaceUnavailable === undefined) chownSync(data, CHART_UID, CHART_UID);
    else
      loudNote(
        `${namespaceUnavailable}: only the copy of /opt/app is read-only; writes elsewhere are not caught`,
      );
    spawnSync('chmod', ['-R', 'a-w', app]);
    spawnSync('chmod', ['u+w', data]);
  }

  test('a copy laid out as the runtime stage runs its CMD on our variables, as the charts run it', async () => {
    layOutApp();
    const port = await freePort();
    const env = imageEnvironment({ PORT: String(port), LEDGER_BACKEND: 'embedded' });
    const health = await healthWhenServing(stageCommand(RUNTIME), {
      cwd: app,
      env,
      port,
      writable: data,
      logFile: join(work, 'cmd.log'),
    });
    assert.deepEqual(
      health.services.map((s) => `${s.name}:${s.status}`),
      ['ledger:embedded:OK', 'metadata:journal:OK'],
    );
    // The embedded stores wrote their journals where DATA_DIR says, and nowhere else could.
    assert.deepEqual(readdirSync(data).sort(), ['ledger.journal', 'metadata.journal']);
  });

  describe("the charts' commands on a central-ledger-format config mounted at config/", () => {
    const mariaDb = useMariaDb('the image layout over MariaDB');

    test('`npm run migrate` applies our migrations; `node src/api/index.js` answers /health', async (t) => {
      const db = mariaDb.current();
      if (db === undefined) return t.skip('MariaDB is not installed');
      layOutApp();
      const database = await db.createDatabase();
      const port = await freePort();
      // The charts' ConfigMap replaces config/ entirely: here its file takes our default's place.
      // Kafka left out: no broker here, and the file alone says whether there is one (the
      // Mojaloop installation test runs the handlers with one).
      const { KAFKA: _kafka, ...file } = readJson<Record<string, unknown>>(
        join(dist, 'config', 'default.json'),
      );
      const config = {
        ...file,
        PORT: port,
        DATABASE: {
          ...(file['DATABASE'] as object),
          HOST: '127.0.0.1',
          PORT: db.port,
          USER: db.user,
          PASSWORD: 'not-the-password', // the chart's secret comes as CLEDG_DATABASE__PASSWORD
          SCHEMA: database,
        },
        MIGRATIONS: { ...(file['MIGRATIONS'] as object), DISABLED: true },
        TIGERBEETLE: { EMBEDDED: true },
      };
      spawnSync('chmod', ['u+w', join(app, 'config'), join(app, 'config', 'default.json')]);
      writeFileSync(join(app, 'config', 'default.json'), JSON.stringify(config, null, 2));
      spawnSync('chmod', ['a-w', join(app, 'config'), join(app, 'config', 'default.json')]);
      const env = imageEnvironment({
        CLEDG_DATABASE__PASSWORD: db.password,
        LOG_LEVEL: 'info',
      });

      const expected = (await migrationSource.getMigrations([])).map((m) =>
        migrationSource.getMigrationName(m),
      );
      const migrate = confined(['npm', 'run', 'migrate'], [data]);
      const first = run(migrate, { cwd: app, env });
      assert.equal(first.status, 0, first.stdout + first.stderr);
      assert.match(first.stdout, new RegExp(`applied: ${expected.join(', ')}\\n`));
      assert.doesNotMatch(first.stdout + first.stderr, /npm (notice|warn)/i);
      const again = run(migrate, { cwd: app, env });
      assert.equal(again.status, 0, again.stdout + again.stderr);
      assert.match(again.stdout, /schema already up to date/);

      const health = await healthWhenServing(['node', 'src/api/index.js'], {
        cwd: app,
        env,
        port,
        writable: data,
        logFile: join(work, 'api.log'),
      });
      assert.ok(
        health.services.some((s) => s.name === 'metadata:mysql' && s.status === 'OK'),
        JSON.stringify(health),
      );
    });
  });

  /** The environment a container of the image starts with, DATA_DIR in the copy, plus `extra`. */
  function imageEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
    const baked = stageEnvironment(RUNTIME);
    const dataDir = baked['DATA_DIR']!.replace(IMAGE_DIR, app);
    assert.equal(dataDir, data, 'DATA_DIR is /opt/app/data in the image');
    return { ...baked, PATH: process.env['PATH'], HOME: '/', DATA_DIR: dataDir, ...extra };
  }
});
