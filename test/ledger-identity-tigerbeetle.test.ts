/**
 * A ledger that is not ours (issue 28, item 1), exactly as an operator met it: the service on a
 * three-replica cluster, its metadata in DATA_DIR (the journal) or in MySQL; the cluster replaced
 * by one formatted anew at the same addresses (a restore gone wrong, a test cluster reused); the
 * service restarted on the same metadata. It must refuse to serve with a message naming the
 * mismatch and the way out, /health DOWN with it, and onboarding answered 2003, never a 500.
 * And two instances starting at once over one MySQL and one cluster record one identity.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../src/config/config';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { bounded } from '../src/util/batch-queue';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { removeScratch, scratchDir } from './support/leftovers';
import { useMariaDb } from './support/mariadb';
import { freePort } from './support/net';
import {
  call,
  mysqlEnv,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  until,
  type Started,
} from './support/service-process';
import {
  formatCluster,
  startCluster,
  tigerbeetleBinary,
  type RunningCluster,
} from './support/tigerbeetle-cluster';
import { onboard } from './support/workload';

const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];
/** Bound on waits that depend on the machine's load, generous so they fail only for a fault. */
const WAIT_MS = 90_000;
const FAST_RETRIES = {
  LEDGER_TIMEOUT_MS: '2000',
  LEDGER_START_RETRY_MS: '100',
  LEDGER_START_RETRY_MAX_MS: '1000',
};
const noCluster = tigerbeetleBinary() === undefined && 'no TigerBeetle server binary';
const mariadb = useMariaDb('the ledger identity with MySQL metadata');

/** The cluster stopped and one formatted anew started at its cluster id and addresses. */
async function replaced(cluster: RunningCluster): Promise<RunningCluster> {
  await cluster.stop();
  const { clusterId, addresses } = cluster;
  return (await formatCluster({ replacing: { clusterId, addresses } })).start();
}

/**
 * The service restarted on metadata written with another ledger: it stays up refusing, /health
 * DOWN naming the mismatch, hub account creation and onboarding a clear 2003.
 */
async function assertRefused(service: Started, metadataPlace: RegExp): Promise<void> {
  const { base } = service;
  const health = await until(
    'the refusal in /health',
    async () => {
      const answer = await call(base, 'GET', '/health');
      assert.notEqual(
        answer.status,
        200,
        `the service serves a ledger not its own: ${answer.text}`,
      );
      return /is not the ledger/.test(answer.body?.reason ?? '') ? answer : undefined;
    },
    WAIT_MS,
  );
  assert.equal(health.status, 503, health.text);
  assert.equal(health.body.status, 'DOWN');
  const reason: string = health.body.reason;
  assert.match(
    reason,
    /^not serving: the ledger at 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+ \(TigerBeetle cluster \d+\) is not the ledger /,
  );
  assert.match(reason, metadataPlace);
  assert.match(reason, /records ledger identity 0x[0-9a-f]{32}, the ledger holds none/);
  assert.match(reason, /Point the service at the ledger this metadata was written with/);
  assert.deepEqual(
    health.body.services.find((s: { name: string }) => s.name === 'ledger:tigerbeetle'),
    { name: 'ledger:tigerbeetle', status: 'DOWN' },
  );
  for (const [url, body] of [
    ['/participants/Hub/accounts', { currency: 'USD', type: 'HUB_RECONCILIATION' }],
    ['/jmeter/participants/create', { name: 'late', currency: 'USD' }],
    ['/participants', { name: 'late', currency: 'USD' }],
  ] as const) {
    const answer = await call(base, 'POST', url, body);
    assert.equal(answer.status, 503, `${url}: ${answer.text}`);
    assert.equal(answer.body.errorInformation.errorCode, '2003');
    assert.match(
      answer.body.errorInformation.errorDescription,
      /not serving: the ledger is not the one this metadata was written with \(see \/health\)$/,
    );
  }
  // Not a crash loop: it stays up, saying why.
  await sleep(1_000);
  assert.equal(service.exit, undefined, tail(service.logFile));
  assert.equal((await call(base, 'GET', '/live')).status, 200);
  assert.match(readFileSync(service.logFile, 'utf8'), /not serving: the ledger is not this/);
}

test(
  'the cluster replaced under journal metadata: noticed while running, refused at restart',
  { skip: noCluster },
  async () => {
    let cluster = await startCluster({ replicas: 3 });
    const dir = scratchDir('ledger-identity-tb-');
    const port = await freePort();
    const env = { ...serviceEnv(port, cluster, join(dir, 'data')), ...FAST_RETRIES };
    let service: Started | undefined;
    try {
      service = await startProcess(
        'service',
        SERVICE_ARGS,
        env,
        port,
        join(dir, 'a.log'),
        '/health',
      );
      await onboard(service.base, 'id', 2);

      cluster = await replaced(cluster);
      // The running service notices (the new cluster evicts its client): it stops serving.
      let last = '';
      const noticed = await until(
        '/health naming the mismatch',
        async () => {
          const answer = await call(service!.base, 'GET', '/health');
          last = answer.text;
          return /is not the ledger/.test(answer.body?.reason ?? '') ? answer : undefined;
        },
        WAIT_MS,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; /health last said ${last}\n${tail(service!.logFile)}`);
      });
      assert.equal(noticed.status, 503, noticed.text);
      assert.equal(noticed.body.status, 'DOWN');
      // Evicted or not, its client is no fault to restart for: a restart mends nothing here.
      assert.equal((await call(service.base, 'GET', '/live')).status, 200);
      const onboarding = await call(service.base, 'POST', '/jmeter/participants/create', {
        name: 'late',
        currency: 'USD',
      });
      assert.equal(onboarding.status, 503, onboarding.text);
      assert.equal(onboarding.body.errorInformation.errorCode, '2003');
      await stopProcess(service);

      service = await startProcess('service', SERVICE_ARGS, env, port, join(dir, 'b.log'), '/live');
      await assertRefused(service, /the metadata in \S+\/data\/metadata\.journal was written with/);
      await stopProcess(service);
      service = undefined;

      // With LEDGER_START_TIMEOUT_MS the start fails at once with the mismatch: no wait mends it.
      const logFile = join(dir, 'c.log');
      const startedAt = Date.now();
      const bounded = { ...env, LEDGER_START_TIMEOUT_MS: '60000' };
      const exited = await startProcess('service', SERVICE_ARGS, bounded, port, logFile, '/live')
        .then((started) => until('the exit', async () => started.exit, WAIT_MS))
        .catch(() => undefined);
      assert.ok(Date.now() - startedAt < 45_000, 'the start waited for its bound');
      if (exited !== undefined) assert.equal(exited.code, 1);
      assert.match(
        readFileSync(logFile, 'utf8'),
        /failed to start: LedgerMismatchError: the ledger at \S+ \(TigerBeetle cluster \d+\) is not the ledger the metadata in \S+ was written with/,
      );
    } finally {
      if (service !== undefined) await stopProcess(service);
      await cluster.stop();
      removeScratch(dir);
    }
  },
);

/**
 * A client on a three-replica cluster whose ledger holds `identity`; `run` may replace the cluster
 * (`at.cluster`), which is stopped at the end whatever happens.
 */
async function withIdentifiedLedger(
  identity: bigint,
  run: (ledger: TigerBeetleLedger, at: { cluster: RunningCluster }) => Promise<void>,
): Promise<void> {
  const at = { cluster: await startCluster({ replicas: 3 }) };
  const ledger = new TigerBeetleLedger({
    clusterId: at.cluster.clusterId,
    replicaAddresses: at.cluster.addresses,
  });
  try {
    assert.equal(await ledger.recordIdentity(identity), identity);
    await run(ledger, at);
  } finally {
    await ledger.close();
    await at.cluster.stop();
  }
}

test(
  'a client that followed the old cluster to a later view still tells the cluster replaced',
  { skip: noCluster },
  () =>
    withIdentifiedLedger(0x1dn, async (ledger, at) => {
      // A view change: the primary killed; the client's next answer comes from the new primary.
      const killed = at.cluster.primary();
      await at.cluster.signal(killed, 'SIGKILL');
      assert.deepEqual(await bounded(ledger.finishedAt([1n]), WAIT_MS, Error), [undefined]);
      assert.notEqual(at.cluster.primary(), killed, 'no view change');
      at.cluster.restart(killed);

      // The new cluster is at view 0: the client ignores its eviction and waits for ever.
      at.cluster = await replaced(at.cluster);
      assert.equal(await bounded(ledger.identity(), WAIT_MS, Error), undefined);
      assert.equal(await bounded(ledger.identity(), WAIT_MS, Error), undefined);
    }),
);

test(
  'a client evicted by the new cluster still tells it: its later requests are told "closed"',
  { skip: noCluster },
  () =>
    withIdentifiedLedger(0xe1n, async (ledger, at) => {
      assert.equal(ledger.lost(), undefined);
      at.cluster = await replaced(at.cluster);
      // Another request meets the eviction first, as the service's background work often does.
      await assert.rejects(bounded(ledger.finishedAt([1n]), WAIT_MS, Error), {
        code: 'ERR_CLIENT_EVICTED',
      });
      // A fault only a restart mends (/live), whoever the cluster is.
      assert.match(
        ledger.lost() ?? '',
        /evicted this process's TigerBeetle client \(ERR_CLIENT_EVICTED\)/,
      );
      assert.equal(await bounded(ledger.identity(), WAIT_MS, Error), undefined);
      // tigerbeetle-node cannot free an evicted client: its callback keeps this process alive
      // until it exits (npm test runs with --test-force-exit).
      await ledger.close();
      // Closed by its owner, the client's "closed" is no eviction: nothing is asked anew.
      await assert.rejects(ledger.identity(), { code: 'ERR_CLIENT_CLOSED' });
    }),
);

test(
  'MySQL metadata: two instances starting at once record one identity; the cluster replaced: refused',
  { skip: noCluster },
  async (t) => {
    const db = mariadb.current();
    if (db === undefined) return t.skip('no MariaDB');
    let cluster = await startCluster({ replicas: 3 });
    const dir = scratchDir('ledger-identity-tb-');
    const database = await db.createDatabase();
    const ports = [await freePort(), await freePort()];
    const envOf = (i: number) => ({
      ...serviceEnv(ports[i]!, cluster, join(dir, `data${i}`)),
      ...mysqlEnv(db, database),
      ...FAST_RETRIES,
    });
    const services: (Started | undefined)[] = [];
    try {
      // A new hub: both instances' first start, at once.
      services.push(
        ...(await Promise.all(
          [0, 1].map((i) =>
            startProcess(
              `service ${i}`,
              SERVICE_ARGS,
              envOf(i),
              ports[i]!,
              join(dir, `${i}.log`),
              '/health',
            ),
          ),
        )),
      );
      const ledger = new TigerBeetleLedger({
        clusterId: cluster.clusterId,
        replicaAddresses: cluster.addresses,
      });
      const store = new MySqlMetadataStore(
        loadConfig({ LOG_LEVEL: 'silent', ...mysqlEnv(db, database) }).mysql,
      );
      try {
        const identity = await ledger.identity();
        assert.notEqual(identity, undefined);
        assert.equal(await store.ledgerIdentity(), identity);
      } finally {
        await ledger.close();
        await store.close();
      }
      await onboard(services[0]!.base, 'my', 2);
      for (const [i, service] of services.entries()) {
        await stopProcess(service!);
        services[i] = undefined;
      }

      cluster = await replaced(cluster);
      services[0] = await startProcess(
        'service 0',
        SERVICE_ARGS,
        envOf(0),
        ports[0]!,
        join(dir, 'restart.log'),
        '/live',
      );
      await assertRefused(
        services[0],
        new RegExp(`the MySQL metadata at 127\\.0\\.0\\.1:${db.port}/${database} was written with`),
      );
    } finally {
      for (const service of services) if (service !== undefined) await stopProcess(service);
      await cluster.stop();
      removeScratch(dir);
    }
  },
);
