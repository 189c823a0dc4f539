/**
 * A short run of the real JMeter plan (jmeter/plan/central-ledger.jmx) through Maven
 * (jmeter/pom.xml) against the service on the embedded ledger, started here in-process.
 *
 *  1. Right answers: the build passes and the results have exactly the data set's samples, all
 *     successful (two-request transfers: prepare, then the payee's FSPIOP PUT).
 *  2. Wrong answers: the same service with an onSend hook that falsifies a few answers (a
 *     transfer lookup's state, an expected 4001 turned into 4200). The build must fail, and the
 *     failed samples must be exactly the falsified ones (single-request transfers here).
 *
 * Needs `java` and `mvn`; skipped loudly without them (failed instead with
 * JMETER_SMOKE_REQUIRED=true). The first Maven run downloads JMeter and the plugin (~115 MB,
 * about a minute); later runs take ~20 s each, and the two cases then run side by side.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { parseConfig, type RawConfig } from '../jmeter/generator/config';
import { planData } from '../jmeter/generator/generate';
import { writeData, type Manifest } from '../jmeter/generator/output';
import { readSamples, type Sample } from '../jmeter/summary';

const JMETER_DIR = join(__dirname, '..', 'jmeter');
const MAVEN_TIMEOUT_MS = 540_000;

const SMOKE_CONFIG: RawConfig = {
  'participant-accounts': 4,
  'account-lookups': 6,
  transfers: 24,
  rejections: 4,
  'transfer-lookups': 8,
  'transfers-single-http-request': false,
  'transfers-amount-max': '250.75',
  'transfers-currency': 'TZS',
  'transfers-over-liquidity': 3,
};

function missingTools(): string[] {
  return ['java', 'mvn'].filter((tool) => {
    const probe = spawnSync(tool, [tool === 'java' ? '-version' : '-v'], { stdio: 'ignore' });
    return probe.error !== undefined || probe.status !== 0;
  });
}

const missing = missingTools();

function skipWithoutTools(t: TestContext): boolean {
  if (missing.length === 0) return false;
  // CI that has a JDK and Maven sets this so that losing them fails instead of skipping.
  if (process.env.JMETER_SMOKE_REQUIRED === 'true')
    assert.fail(`JMETER_SMOKE_REQUIRED=true but ${missing.join(' and ')} not found on PATH`);
  process.stderr.write(
    `\n*** SKIPPED jmeter smoke test: ${missing.join(' and ')} not found on PATH; the JMeter plan was NOT exercised ***\n\n`,
  );
  t.skip(`${missing.join(', ')} not installed`);
  return true;
}

/** The service on the embedded ledger, its journals in the test's own directory. */
async function startService(
  dir: string,
  onSend?: (url: string, payload: string) => string,
): Promise<{ service: Service; port: number }> {
  const service = await buildService(
    loadConfig({
      JMETER_ENABLED: 'true',
      LOG_LEVEL: 'silent',
      DATA_DIR: join(dir, 'service-data'),
    }),
  );
  if (onSend !== undefined) {
    service.app.addHook('onSend', async (request, _reply, payload) =>
      typeof payload === 'string' ? onSend(request.url, payload) : payload,
    );
  }
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  return { service, port: (service.app.server.address() as AddressInfo).port };
}

interface MavenRun {
  status: number | null;
  output: string;
  samples: Sample[];
  report: boolean;
}

/** Runs the plan through Maven without blocking this process, which serves the requests. */
function runMaven(dir: string, port: number, dataDir: string): Promise<MavenRun> {
  const buildDir = join(dir, 'target');
  const args = [
    '-B',
    '-f',
    join(JMETER_DIR, 'pom.xml'),
    'clean',
    'verify',
    '-Djmeter.host=127.0.0.1',
    `-Djmeter.port=${port}`,
    `-Djmeter.dataDir=${dataDir}`,
    `-Djmeter.buildDir=${buildDir}`,
    '-Djmeter.threads=3',
    '-Djmeter.rampUp=0',
    '-Djmeter.duration=120',
    '-Djmeter.xmx=512',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('mvn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), MAVEN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      const results = join(buildDir, 'jmeter', 'results', 'central-ledger.csv');
      resolve({
        status,
        output,
        samples: existsSync(results) ? readSamples(readFileSync(results, 'utf8')) : [],
        report: existsSync(join(buildDir, 'jmeter', 'reports', 'central-ledger', 'index.html')),
      });
    });
  });
}

function generate(dir: string, overrides: Partial<RawConfig>, seed: string): Manifest {
  return writeData(
    planData(parseConfig({ ...SMOKE_CONFIG, ...overrides }), seed),
    join(dir, 'data'),
  );
}

function countByLabel(samples: Sample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of samples) counts[s.label] = (counts[s.label] ?? 0) + 1;
  return counts;
}

function expectedByLabel(manifest: Manifest): Record<string, number> {
  return Object.fromEntries(Object.entries(manifest.actionTypes).filter(([, n]) => n > 0));
}

function tail(output: string): string {
  return output.split('\n').slice(-40).join('\n');
}

/**
 * The two Maven runs go side by side (most of their time is JVM start-up, not load), except on
 * the first run, when both would download JMeter into the same local repository at once.
 */
const jmeterDownloaded = existsSync(
  join(homedir(), '.m2', 'repository', 'org', 'apache', 'jmeter', 'ApacheJMeter_core', '5.6.3'),
);

describe('jmeter smoke', { concurrency: jmeterDownloaded }, () => {
  test(
    'jmeter smoke: the real plan through Maven passes against the service, every sample checked',
    { timeout: MAVEN_TIMEOUT_MS + 60_000 },
    async (t) => {
      if (skipWithoutTools(t)) return;
      const dir = mkdtempSync(join(tmpdir(), 'jmeter-smoke-'));
      const { service, port } = await startService(dir);
      try {
        const manifest = generate(
          dir,
          { 'transfers-single-http-request': false },
          `smoke-ok-${process.pid}`,
        );
        const run = await runMaven(dir, port, join(dir, 'data'));
        assert.equal(run.status, 0, `Maven build failed:\n${tail(run.output)}`);
        assert.match(run.output, /BUILD SUCCESS/);
        assert.equal(run.samples.length, manifest.samples, tail(run.output));
        assert.deepEqual(
          run.samples.filter((s) => !s.success).map((s) => `${s.label}: ${s.failureMessage}`),
          [],
        );
        assert.deepEqual(countByLabel(run.samples), expectedByLabel(manifest));
        // The expected refusals were sent and answered 400, and still count as successes.
        assert.equal(
          run.samples.filter((s) => s.responseCode === '400').length,
          SMOKE_CONFIG['transfers-over-liquidity'],
        );
        assert.ok(run.report, 'HTML dashboard generated');
      } finally {
        await service.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test(
    'jmeter smoke: wrong answers from the service fail the build, and exactly those samples fail',
    { timeout: MAVEN_TIMEOUT_MS + 60_000 },
    async (t) => {
      if (skipWithoutTools(t)) return;
      const dir = mkdtempSync(join(tmpdir(), 'jmeter-smoke-'));
      const seed = `smoke-wrong-${process.pid}`;
      const plan = planData(
        parseConfig({ ...SMOKE_CONFIG, 'transfers-single-http-request': true }),
        seed,
      );
      const manifest = writeData(plan, join(dir, 'data'));
      // One committed transfer that is looked up, whose lookups will claim it is still RESERVED,
      // and one over-liquidity prepare whose 4001 will come back as 4200.
      const lookedUp = plan.transferLookups
        .map((l) => plan.transfers[l.transfer]!)
        .find((x) => x.kind === 'commit');
      const overLimit = plan.transfers.find((x) => x.kind === 'over_liquidity');
      assert.ok(
        lookedUp && overLimit,
        'the data has a committed transfer that is looked up, and an over-liquidity one',
      );
      let overLimitAnswers = 0;
      const { service, port } = await startService(dir, (url, payload) => {
        if (url.includes(`/transfers/${lookedUp.transferId}`))
          return payload.replace('"transferState":"COMMITTED"', '"transferState":"RESERVED"');
        if (url === '/jmeter/transfers/prepare' && payload.includes('"errorCode":"4001"')) {
          return overLimitAnswers++ === 0
            ? payload.replace('"errorCode":"4001"', '"errorCode":"4200"')
            : payload;
        }
        return payload;
      });
      try {
        const run = await runMaven(dir, port, join(dir, 'data'));
        assert.notEqual(
          run.status,
          0,
          'the Maven build must fail when the service answers wrongly',
        );
        assert.match(run.output, /BUILD FAILURE/);
        assert.match(run.output, /Failing build because error percentage/);
        assert.equal(run.samples.length, manifest.samples, tail(run.output));
        const failed = run.samples.filter((s) => !s.success);
        const wrongLookups = plan.transferLookups.filter(
          (l) => plan.transfers[l.transfer] === lookedUp,
        ).length;
        assert.equal(
          failed.length,
          wrongLookups + 1,
          failed.map((s) => `${s.label}: ${s.failureMessage}`).join('\n'),
        );
        for (const sample of failed.filter((s) => s.label === 'transfer_lookup')) {
          assert.match(
            sample.failureMessage,
            new RegExp(
              `${lookedUp.transferId}: \\$\\.transferState expected COMMITTED, got RESERVED`,
            ),
          );
        }
        const refusal = failed.filter((s) => s.label === 'transfer_prepare_fulfil');
        assert.equal(refusal.length, 1);
        assert.match(
          refusal[0]!.failureMessage,
          /\$\.errorInformation\.errorCode expected 4001, got 4200/,
        );
      } finally {
        await service.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
