/**
 * A start that waits for its ledger (issue 28): the service started as main.ts starts it, beside
 * a three-replica TigerBeetle cluster whose replicas come up only seconds later, listens at once,
 * answers /health DOWN (503, why) and every other route 2003, and serves once the ledger answers.
 * With LEDGER_START_TIMEOUT_MS set and no ledger, it exits with the clear error.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { removeScratch, scratchDir } from './support/leftovers';
import { freePort, freePorts } from './support/net';
import {
  call,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  until,
  type Started,
} from './support/service-process';
import { formatCluster, tigerbeetleBinary } from './support/tigerbeetle-cluster';
import { onboard, Workload } from './support/workload';

const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];
/** How long after the service the replicas are started: a restarted replica took ~9.5 s. */
const REPLICAS_LATE_MS = 7_000;
/** Bound on waits that depend on the machine's load, generous so they fail only for a fault. */
const SERVING_TIMEOUT_MS = 90_000;
/** Short bounds, so that several attempts fail before the replicas come up. */
const FAST_RETRIES = {
  LEDGER_TIMEOUT_MS: '1000',
  LEDGER_START_RETRY_MS: '100',
  LEDGER_START_RETRY_MAX_MS: '1000',
};

test(
  'started before its replicas, the service answers DOWN, then serves once they are up',
  { skip: tigerbeetleBinary() === undefined && 'no TigerBeetle server binary' },
  async () => {
    const cluster = await formatCluster({ replicas: 3 });
    const dir = scratchDir('ledger-wait-');
    const port = await freePort();
    const logFile = join(dir, 'service.log');
    let service: Started | undefined;
    try {
      // Ready (for startProcess) once it listens: /live answers 200 while the ledger is awaited.
      service = await startProcess(
        'service',
        SERVICE_ARGS,
        { ...serviceEnv(port, cluster, join(dir, 'data')), ...FAST_RETRIES },
        port,
        logFile,
        '/live',
      );
      const startedAt = Date.now();
      const { base } = service;

      const waiting = await call(base, 'GET', '/health');
      assert.equal(waiting.status, 503, waiting.text);
      assert.equal(waiting.body.status, 'DOWN');
      assert.match(waiting.body.reason, /ledger/);
      assert.deepEqual(
        waiting.body.services.find((s: { name: string }) => s.name === 'ledger:tigerbeetle'),
        { name: 'ledger:tigerbeetle', status: 'DOWN' },
      );
      const refused = await call(base, 'GET', '/participants');
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.body.errorInformation.errorCode, '2003');
      // A write is refused before it is read: nothing is written.
      const write = await call(base, 'POST', '/participants', { name: 'early', currency: 'USD' });
      assert.equal(write.status, 503, write.text);
      // Once an attempt has failed, /health names its error.
      const failed = await until(
        'a failed attempt in /health',
        async () => {
          const health = await call(base, 'GET', '/health');
          return /no answer within/.test(health.body.reason ?? '') ? health : undefined;
        },
        SERVING_TIMEOUT_MS,
      );
      assert.equal(failed.status, 503);
      assert.match(failed.body.reason, /^waiting for the ledger: ledger unavailable/);

      await sleep(Math.max(0, REPLICAS_LATE_MS - (Date.now() - startedAt)));
      assert.equal(service.exit, undefined, `the service exited:\n${tail(logFile)}`);
      await cluster.start();

      const up = await until(
        '/health OK',
        async () => {
          const health = await call(base, 'GET', '/health');
          return health.status === 200 ? health : undefined;
        },
        SERVING_TIMEOUT_MS,
      );
      assert.equal(up.body.status, 'OK');
      assert.equal(up.body.reason, undefined);

      const names = await onboard(base, 'w', 2);
      const workload = new Workload(names, { conditionPool: 1, amountPool: 1 });
      try {
        const { transfer, condition, ilpPacket } = workload.next(false);
        const payer = names[transfer.payer]!;
        const payee = names[transfer.payee]!;
        const prepared = await call(
          base,
          'POST',
          '/transfers',
          workload.prepareBody(transfer, condition, ilpPacket, false),
          workload.headers(payer, payee),
        );
        assert.equal(prepared.status, 201, prepared.text);
        const fulfilled = await call(
          base,
          'PUT',
          `/transfers/${transfer.id}`,
          workload.fulfilBody(transfer),
          workload.headers(payee, payer),
        );
        assert.equal(fulfilled.status, 200, fulfilled.text);
        assert.equal(fulfilled.body.transferState, 'COMMITTED');
      } finally {
        workload.stop();
      }
    } finally {
      if (service !== undefined) await stopProcess(service);
      await cluster.stop();
      removeScratch(dir);
    }
  },
);

test('with LEDGER_START_TIMEOUT_MS and no ledger, the start fails with the clear error', async () => {
  const dir = scratchDir('ledger-wait-');
  const port = await freePort();
  // Nothing listens on these: the replicas never come up.
  const addresses = (await freePorts(3)).map((p) => `127.0.0.1:${p}`);
  const logFile = join(dir, 'service.log');
  try {
    const service = await startProcess(
      'service',
      SERVICE_ARGS,
      {
        ...serviceEnv(port, { clusterId: 1n, addresses }, join(dir, 'data')),
        ...FAST_RETRIES,
        LEDGER_START_TIMEOUT_MS: '3000',
      },
      port,
      logFile,
      '/live',
    );
    const exited = await until('the exit', async () => service.exit, SERVING_TIMEOUT_MS);
    assert.equal(exited.code, 1, tail(logFile));
    assert.match(
      readFileSync(logFile, 'utf8'),
      /failed to start: LedgerUnavailableError: ledger unavailable: no answer within 1000 ms/,
    );
  } finally {
    removeScratch(dir);
  }
});
