/**
 * The composition root: builds the ledger (embedded or TigerBeetle, behind the batcher), the
 * metadata store and the domain services, and composes the Fastify server of them: a plugin per
 * HTTP capability; the settlement port and the timers start in its onReady hooks once the
 * ledger's start-up work has succeeded; the shutdown order is that of its onClose hooks. What a
 * process runs of it is its config's `roles` (all of it by default; central-ledger's entry points,
 * src/api and src/handlers, choose a part).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
} from 'fastify';
import swagger from '@fastify/swagger';
import type { Config } from './config/config';
import { HUB_NAME, ParticipantService } from './domain/participants/service';
import { TransferService } from './domain/transfers/service';
import type { Warn } from './domain/open-records/expiry-sweep';
import type { MetadataStore, TransferRecord } from './ports/metadata';
import { adminRoutes } from './handlers/http/admin';
import { installErrorHandling, preRoutingErrorOptions } from './handlers/http/errors';
import { healthAnswer, healthRoutes, type HealthSource } from './handlers/http/health';
import { jmeterRoutes } from './handlers/http/jmeter';
import { metrics } from './handlers/http/metrics';
import { documentResponses } from './handlers/http/responses';
import { transferRoutes } from './handlers/http/transfers';
import { KafkaTransport } from './handlers/kafka/transport';
import { BatchingLedger } from './ledger/batching';
import { JournaledLedger } from './ledger/journaled';
import type { Ledger } from './ports/ledger';
import { TigerBeetleLedger } from './ledger/tigerbeetle';
import { JournalMetadataStore } from './metadata/journal';
import { MySqlMetadataStore } from './metadata/mysql';
import { MongoBulkStore, mongoUrl } from './metadata/mongo-bulk';
import type { BulkApi } from './domain/bulk/api';
import { BulkService } from './domain/bulk/service';
import {
  settlementEventsOver,
  type SettlementPublisher,
} from './handlers/kafka/settlement-notifications';
import { settlementRoutes } from './handlers/http/settlement';
import { SettlementService } from './domain/settlement/settlements';
import { WindowService } from './domain/settlement/windows';
import { faultAt } from './util/fault';
import { retryWithBackoff } from './util/backoff';
import { installStartGate, StartGate } from './handlers/http/start-gate';
import { fxRoutes } from './handlers/http/fx';
import { FxService } from './domain/fx/service';
import { FxConversions } from './domain/fx/conversions';
import {
  LedgerIdentity,
  LedgerMismatchError,
  identityText,
  type IdentityPlaces,
} from './domain/participants/ledger-identity';

export const VERSION = '0.1.0';

/**
 * FSPIOP bodies arrive as application/vnd.interoperability.<resource>+json;version=1.1
 * (fxTransfers: 2.0).
 */
const FSPIOP_CONTENT_TYPE = /^application\/vnd\.interoperability\.[a-zA-Z]+\+json/;

export interface Service {
  /**
   * The sweeps and the settlement port start when it is ready (its first listen, inject or
   * ready()); closing it stops them and Kafka, then closes the ledger and the metadata store.
   */
  app: FastifyInstance;
  kafka: KafkaTransport | undefined;
  ledger: BatchingLedger;
  participants: ParticipantService;
  transfers: TransferService;
  fx: FxService;
  windows: WindowService;
  settlements: SettlementService;
  /** Closes `app`, and with it all the rest. */
  close(): Promise<void>;
}

/** TigerBeetle, or the embedded ledger journalled in DATA_DIR. */
export async function createLedger(config: Config): Promise<Ledger> {
  if (config.ledger.backend === 'embedded')
    return JournaledLedger.open(config.dataDir, config.dataTableHotEntries);
  // The TigerBeetle client takes IP addresses only: names (compose services, Kubernetes DNS) are
  // resolved once, here.
  const replicaAddresses = await Promise.all(
    config.ledger.tigerbeetle.addresses.map(resolveAddress),
  );
  return new TigerBeetleLedger({
    clusterId: config.ledger.tigerbeetle.clusterId,
    replicaAddresses,
  });
}

async function resolveAddress(address: string): Promise<string> {
  const separator = address.lastIndexOf(':');
  if (separator < 0) return address;
  const host = address.slice(0, separator);
  if (isIP(host) !== 0) return address;
  const { address: ip } = await lookup(host, { family: 4 });
  return `${ip}:${address.slice(separator + 1)}`;
}

/** MySQL when MYSQL_ENABLED, else the embedded store journalled in DATA_DIR. */
export async function createMetadataStore(config: Config): Promise<MetadataStore> {
  if (!config.mysql.enabled)
    return JournalMetadataStore.open(config.dataDir, config.dataTableHotEntries);
  const store = new MySqlMetadataStore(config.mysql);
  if (config.mysql.migrateOnStart) await store.migrate();
  return store;
}

/** What the bulk flow is built of: its stores and the services it runs transfers through. */
export interface BulkFlowParts {
  stores: MongoBulkStore;
  transfers: TransferService;
  metadata: MetadataStore;
  config: Config['bulk'];
}

/** The bulk flow: BulkService over the transfer flow, the object store and the participants. */
function bulkService({ stores, transfers, metadata, config }: BulkFlowParts): BulkApi {
  return new BulkService({
    transfers,
    store: stores,
    objects: stores,
    participant: (name) => metadata.participant(name),
    hubName: HUB_NAME,
    maxFulfilAgeMs: config.maxFulfilTimeoutSeconds * 1000,
  });
}

interface ServiceParts {
  ledger?: Ledger;
  store?: MetadataStore;
  settlementPublisher?: SettlementPublisher;
  /** Builds the bulk flow; BulkService unless a test passes its own. */
  bulkFlow?: (parts: BulkFlowParts) => BulkApi;
}

/** Where the object store is, if one is configured (bulk transfers are on only with one). */
export function objectStoreUrl(config: Config): string | undefined {
  const { url, host, port, user, password } = config.objectStore;
  if (url !== undefined) return url;
  return host === undefined ? undefined : mongoUrl({ host, port, user, password });
}

/**
 * The bulk flow and its object store, or undefined where bulk transfers are off; the log says
 * which, and why.
 */
async function openBulk(
  config: Config,
  build: (parts: BulkFlowParts) => BulkApi,
  services: Omit<BulkFlowParts, 'stores' | 'config'> & { log: FastifyBaseLogger },
): Promise<{ api: BulkApi; stores: MongoBulkStore } | undefined> {
  const { log, ...flowServices } = services;
  const url = objectStoreUrl(config);
  const off = (reason: string): undefined => {
    log.info({ bulk: false }, `bulk transfers off: ${reason}`);
    return undefined;
  };
  if (url === undefined)
    return off(
      'no object store configured (MONGODB_URL or MONGODB_HOST; central-ledger: MONGODB.DISABLED ' +
        'false)',
    );
  if (!config.kafka.enabled)
    return off('bulk-api-adapter talks to central-ledger over Kafka only, and Kafka is off');
  const stores = await MongoBulkStore.open({ url, database: config.objectStore.database });
  const where = new URL(url);
  log.info(
    { bulk: true, objectStore: `${where.host}/${config.objectStore.database}` },
    'bulk transfers on: the object store answers',
  );
  return { api: build({ ...flowServices, stores, config: config.bulk }), stores };
}

/**
 * The service, started: the ledger's start-up work done (an error rejects at once), Kafka
 * consuming. Its server is not listening yet.
 */
export async function buildService(config: Config, parts: ServiceParts = {}): Promise<Service> {
  const composed = await composeService(config, parts);
  await composed.startLedgerWork();
  await composed.serve();
  return composed.service;
}

/**
 * The service as main.ts starts it: listening at once, then waiting for a TigerBeetle ledger that
 * does not answer yet (replicas still coming up beside it): /health answers DOWN with the reason
 * and every other route 2003, while the ledger's start-up work is retried with backoff
 * (LEDGER_START_RETRY_MS doubling up to LEDGER_START_RETRY_MAX_MS). `serving` resolves once the
 * service serves; it rejects with the last error once LEDGER_START_TIMEOUT_MS (when not 0) has
 * passed. The embedded ledger is never "not up yet": an error of its start rejects at once, before
 * the listen.
 */
export async function listenThenServe(
  config: Config,
): Promise<{ service: Service; serving: Promise<void> }> {
  const composed = await composeService(config, {});
  const { service, gate, stopping } = composed;
  if (config.ledger.backend === 'embedded') await composed.startLedgerWork();
  await service.app.listen({ host: config.http.host, port: config.http.port });
  const serving =
    config.ledger.backend === 'embedded'
      ? composed.serve()
      : retryWithBackoff(
          async () => {
            // Answers first: with no participant yet the start-up work may not ask the ledger.
            await ledgerAnswers(service.ledger);
            // Not this metadata's ledger: no retry mends that.
            return composed.startLedgerWork().catch((error: unknown) => {
              if (error instanceof LedgerMismatchError) return error;
              throw error;
            });
          },
          {
            initialMs: config.ledger.start.retryMs,
            maxMs: config.ledger.start.retryMaxMs,
            timeoutMs: config.ledger.start.timeoutMs,
          },
          (error, retryInMs) => {
            gate.failed(error);
            service.app.log.warn({ err: error, retryInMs }, 'ledger not answering: start retried');
          },
          stopping,
        ).then((mismatch) =>
          mismatch === undefined ? composed.serve() : refuseToServe(config, composed, mismatch),
        );
  return { service, serving };
}

/**
 * The ledger is not the metadata's: the service stays up refusing (/health DOWN with the reason,
 * every other route 2003) until closed, or, with LEDGER_START_TIMEOUT_MS set, the start fails
 * at once with the mismatch.
 */
async function refuseToServe(
  config: Config,
  { service, gate, stopping }: { service: Service; gate: StartGate; stopping: AbortSignal },
  mismatch: LedgerMismatchError,
): Promise<void> {
  gate.refuse(mismatch.message);
  service.app.log.error({ err: mismatch }, 'not serving: the ledger is not this metadata’s');
  if (config.ledger.start.timeoutMs !== 0) throw mismatch;
  await new Promise((_, reject) => {
    stopping.addEventListener('abort', () => reject(stopping.reason as Error), { once: true });
  });
}

/** Where the ledger and the metadata are, as the identity check's messages name them. */
function identityPlaces(config: Config): IdentityPlaces {
  const { addresses, clusterId } = config.ledger.tigerbeetle;
  const { host, port, database } = config.mysql;
  return {
    ledger:
      config.ledger.backend === 'embedded'
        ? `the embedded ledger in ${join(config.dataDir, 'ledger.journal')}`
        : `the ledger at ${addresses.join(',')} (TigerBeetle cluster ${clusterId})`,
    metadata: config.mysql.enabled
      ? `the MySQL metadata at ${host}:${port}/${database}`
      : `the metadata in ${join(config.dataDir, 'metadata.journal')}`,
  };
}

async function composeService(
  config: Config,
  parts: ServiceParts,
): Promise<{
  service: Service;
  gate: StartGate;
  /** Aborted when the service closes: a start-up wait stops. */
  stopping: AbortSignal;
  /** What needs the ledger before the service serves; repeatable until it succeeds. */
  startLedgerWork: () => Promise<void>;
  /** Serving from now on: requests, the background work, Kafka consuming. */
  serve: () => Promise<void>;
}> {
  const ledger = batchingLedger(config, parts.ledger ?? (await createLedger(config)));
  const store = parts.store ?? (await createMetadataStore(config));
  const identity = new LedgerIdentity(ledger, store, identityPlaces(config));
  const participants = new ParticipantService(store, ledger);
  const fault = faultAt(config.faultPoint);
  // Settlement's Kafka messages go out through the transport made below (none with Kafka off); a
  // failed produce is logged, the request stands.
  const publisher: SettlementPublisher = parts.settlementPublisher ?? {
    publish: async (topic, messages) => {
      await kafka
        ?.publish(topic, messages)
        .catch((error: unknown) =>
          app.log.warn({ err: error, topic }, 'settlement messages not produced'),
        );
    },
  };
  const settlementEvents = settlementEventsOver(publisher);
  const windows = new WindowService(store, ledger, fault, settlementEvents);
  const settlements = new SettlementService(store, ledger, windows, {
    fault,
    events: settlementEvents,
  });
  // Called only once requests or sweeps run, by when the logger below exists.
  const warn: Warn = (fields, message) => app.log.warn(fields, message);
  if (store instanceof MySqlMetadataStore) store.warn = warn;
  const conversions = new FxConversions(store, ledger, { fault, warn });
  const transfers = new TransferService(store, ledger, {
    fault,
    requestTimeoutMs: config.ledger.timeoutMs,
    // Another instance's record of a finish is waited for within the ledger's bound, and within a
    // third of a Kafka consumer's session (docs/kafka.md "Waits inside a batch").
    finishWaitMs: Math.min(config.ledger.timeoutMs, config.kafka.sessionTimeoutMs / 3),
    placement: windows,
    warn,
    dependencies: conversions,
  });
  const fx = new FxService(conversions, transfers);
  const sweeps = sweepsExpiries(config, store);
  // The records left open need the metadata only (their ledger states are read by the sweeps). A
  // process that does not sweep leaves them to the one that does.
  if (sweeps) {
    await transfers.loadOpen();
    await fx.loadOpen();
  }

  const app = await httpServer(config);
  const bulk = await openBulk(config, parts.bulkFlow ?? bulkService, {
    transfers,
    metadata: store,
    log: app.log,
  });
  const kafka = config.kafka.enabled
    ? new KafkaTransport({
        config: config.kafka,
        consume: config.roles.consume,
        transfers,
        fx,
        ...(bulk === undefined ? {} : { bulk: { api: bulk.api, results: bulk.stores } }),
        log: app.log,
        instance: config.kafka.transactionalId ?? `${hostname()}-${config.http.port}`,
        fault,
      })
    : undefined;
  const gate = new StartGate();
  installStartGate(app, gate);
  const stopping = new AbortController();
  app.addHook('preClose', async () => {
    stopping.abort();
    gate.close();
  });

  // What runs beside the requests stops when the server closes. Fastify first stops taking
  // requests and drains those under way, then runs the onClose hooks last registered first: the
  // sweeps and the settlement port stop, then Kafka (its batches under way finish), then the
  // ledger and, last, the metadata store.
  app.addHook('onClose', async () => {
    await store.close();
  });
  if (bulk !== undefined)
    app.addHook('onClose', async () => {
      await bulk.stores.close();
    });
  app.addHook('onClose', async () => {
    await ledger.close();
  });
  if (kafka !== undefined)
    app.addHook('onClose', async () => {
      await kafka.stop();
    });

  await registerHttpApi(app, {
    config,
    ledger,
    healthSource: healthOf({ ledger, identity, store, kafka, objectStore: bulk?.stores, gate }),
    gate,
    participants,
    transfers,
    fx,
    windows,
    settlements,
  });
  await app.register(backgroundWork, {
    config,
    sweeps,
    transfers,
    fx,
    windows,
    kafka,
    bulk: bulk?.api,
    gate,
  });

  return {
    service: {
      app,
      kafka,
      ledger,
      participants,
      transfers,
      fx,
      windows,
      settlements,
      async close() {
        await app.close();
      },
    },
    gate,
    stopping: stopping.signal,
    async startLedgerWork() {
      // Before anything is written to the ledger.
      const checked = await identity.verify();
      if (checked.outcome !== 'matched')
        app.log.warn(
          { ledgerIdentity: identityText(checked.identity), outcome: checked.outcome },
          'ledger identity recorded',
        );
      await participants.openLedgerAccounts();
      await windows.start();
    },
    async serve() {
      gate.open();
      // Consuming from now on, not once the server is ready: a caller of Kafka alone may never
      // start HTTP.
      await kafka?.start();
    },
  };
}

/** The ledger behind the batcher, with the batch limits of the configuration. */
function batchingLedger(config: Config, ledger: Ledger): BatchingLedger {
  const { batch } = config.ledger;
  return new BatchingLedger(ledger, {
    maxBatchCommands: batch.maxCommands,
    maxInFlight: batch.maxInFlight,
    lingerMs: batch.lingerMs,
    adaptive: {
      ...(batch.maxLingerMs === undefined ? {} : { maxLingerMs: batch.maxLingerMs }),
      latencyBudgetMs: batch.latencyBudgetMs,
      growAtCommands: batch.growAtCommands,
    },
    idleMs: batch.idleMs,
    maxQueuedCommands: batch.maxQueuedCommands,
    timeoutMs: config.ledger.timeoutMs,
  });
}

/**
 * The HTTP API on the server itself (not a plugin of its own: the metrics' hooks must see every
 * request, 404s included), a plugin per capability. Every process serves /health, /live and
 * /metrics, the rest as its roles say; settlement under central-settlement's prefix, on this
 * server and on SETTLEMENT_PORT when it is set.
 */
async function registerHttpApi(
  app: FastifyInstance,
  options: {
    config: Config;
    ledger: BatchingLedger;
    healthSource: HealthSource;
    gate: StartGate;
    participants: ParticipantService;
    transfers: TransferService;
    fx: FxService;
    windows: WindowService;
    settlements: SettlementService;
  },
): Promise<void> {
  const { config, ledger, healthSource, gate, participants, transfers, fx } = options;
  await app.register(metrics, { ledger, ...config.metrics });
  const health = healthAnswer({ source: healthSource, version: VERSION });
  await app.register(healthRoutes, { health, source: healthSource });
  if (config.roles.api) {
    await app.register(adminRoutes, { participants, transfers });
    await app.register(transferRoutes, { transfers });
    await app.register(fxRoutes, { fx });
  }
  const { windows, settlements } = options;
  const settlementApi = { prefix: '/v2', windows, settlements, health };
  if (config.roles.settlementApi) await app.register(settlementRoutes, settlementApi);
  if (config.roles.settlementApi && config.settlement.port !== undefined) {
    const settlementServer = await httpServer(config);
    installStartGate(settlementServer, gate);
    await settlementServer.register(settlementRoutes, settlementApi);
    await app.register(companionServer, {
      server: settlementServer,
      listen: { host: config.http.host, port: config.settlement.port },
    });
  }
  if (config.roles.api && config.jmeter.enabled)
    await app.register(jmeterRoutes, {
      prefix: '/jmeter',
      participants,
      transfers,
      funding: { netDebitCap: '1000000000', liquidity: '1000000000' },
    });
  if (config.roles.api || config.roles.settlementApi)
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/** Resolves once the ledger answers a lookup (of an account that need not exist). */
async function ledgerAnswers(ledger: Ledger): Promise<void> {
  await ledger.balances([{ participant: 'Hub', currency: 'XTS' }]);
}

/**
 * /health's view of the ledger (answering, and still the one verified at start: one that is not
 * stops the service serving), the metadata store and the Kafka broker; /live's of Kafka.
 */
function healthOf({
  ledger,
  identity,
  store,
  kafka,
  objectStore,
  gate,
}: {
  ledger: BatchingLedger;
  identity: LedgerIdentity;
  store: MetadataStore;
  kafka: KafkaTransport | undefined;
  /** Where bulk transfers are on: the object store they need. */
  objectStore: MongoBulkStore | undefined;
  gate: StartGate;
}): HealthSource {
  return {
    notServing: () => gate.refusal,
    async check() {
      // Not asked while starting: the start-up work's own attempts tell.
      const ledgerUp =
        gate.refusal === undefined
          ? Promise.allSettled([ledgerAnswers(ledger), identity.recheck()]).then(
              ([answers, same]) => {
                if (same.status === 'rejected' && same.reason instanceof LedgerMismatchError)
                  gate.refuse(same.reason.message);
                return answers.status === 'fulfilled' && same.status === 'fulfilled';
              },
            )
          : false;
      const [ledgerOk, storeOk, brokerOk, objectsOk] = await Promise.all([
        ledgerUp,
        store.healthy(),
        kafka?.healthy(),
        objectStore?.healthy(),
      ]);
      return [
        { name: `ledger:${ledger.name}`, status: ledgerOk ? 'OK' : 'DOWN' },
        { name: `metadata:${store.name}`, status: storeOk ? 'OK' : 'DOWN' },
        ...(kafka === undefined
          ? []
          : [
              {
                name: 'broker:kafka',
                status: brokerOk === true ? ('OK' as const) : ('DOWN' as const),
              },
            ]),
        ...(objectStore === undefined
          ? []
          : [
              {
                name: `objectStore:${objectStore.name}`,
                status: objectsOk === true ? ('OK' as const) : ('DOWN' as const),
              },
            ]),
      ];
    },
    processFaults() {
      const faults: string[] = [];
      // Not once the ledger was found not to be ours: a restart mends nothing (decision 0007).
      const lost = gate.refusingForGood ? undefined : ledger.lost();
      if (lost !== undefined) faults.push(lost);
      const crashed = kafka?.crashReason();
      if (crashed !== undefined) faults.push(`Kafka consumer stopped for good: ${crashed}`);
      return faults;
    },
  };
}

/**
 * Whether this process tells the expiries (the sweep): as its roles say, but always with a store no
 * other process shares (the embedded journal), whose records no other process can take over.
 */
function sweepsExpiries(config: Config, store: MetadataStore): boolean {
  return config.roles.expirySweep || store.overdue === undefined;
}

/** What the service does of its own accord while the server is up. */
const backgroundWork: FastifyPluginAsync<{
  config: Config;
  /** Whether this process sweeps expiries (sweepsExpiries), or hands them over. */
  sweeps: boolean;
  transfers: TransferService;
  fx: FxService;
  windows: WindowService;
  kafka: KafkaTransport | undefined;
  /** The bulk flow, where bulk transfers are on (they need Kafka). */
  bulk: BulkApi | undefined;
  gate: StartGate;
}> = async (app, { config, sweeps, transfers, fx, windows, kafka, bulk, gate }) => {
  // A close a crash interrupted is finished in the background: the service answers meanwhile.
  app.addHook('onReady', async () => {
    gate.whenOpen(() => {
      windows
        .resumeCloses()
        .catch((error: unknown) =>
          app.log.warn({ err: error }, 'resuming settlement window closes failed'),
        );
    });
  });
  if (!sweeps) {
    // Another process tells the expiries: this one lets go of what it would have swept.
    await app.register(repeating, {
      gate,
      everyMs: config.expirySweepMs,
      tick() {
        transfers
          .handOverDue()
          .catch((error: unknown) => app.log.warn({ err: error }, 'handing over transfers failed'));
        fx.handOverDue().catch((error: unknown) =>
          app.log.warn({ err: error }, 'handing over fx transfers failed'),
        );
      },
    });
    return;
  }
  // Reservations left by an instance gone for good (scaled down) are taken over by the sweep of
  // whichever instance finds them overdue. A sweeping process without the API (central-ledger's
  // timeout handler) sweeps for processes that do not (its API, its prepare handlers): it takes
  // over every reservation past its expiration, each sweep (docs/architecture.md, "Roles").
  const takeover = config.roles.api
    ? { everyMs: config.expiryTakeoverMs, overdueByMs: config.expiryTakeoverMs }
    : { everyMs: config.expirySweepMs, overdueByMs: 0 };
  await app.register(repeating, {
    gate,
    everyMs: takeover.everyMs,
    tick() {
      transfers
        .adoptOverdue(takeover.overdueByMs)
        .catch((error: unknown) =>
          app.log.warn({ err: error }, 'taking over overdue transfers failed'),
        );
      fx.adoptOverdue(takeover.overdueByMs).catch((error: unknown) =>
        app.log.warn({ err: error }, 'taking over overdue fx transfers failed'),
      );
    },
  });
  await app.register(repeating, {
    gate,
    everyMs: config.expirySweepMs,
    tick() {
      // A bulk's members are told with their bulk (its final PUT), never one by one.
      const notifyExpired =
        kafka === undefined
          ? undefined
          : async (expired: TransferRecord[]) =>
              kafka.notifyExpired(
                bulk === undefined ? expired : await bulk.withoutMembers(expired),
              );
      transfers
        .expireDue(notifyExpired)
        .catch((error: unknown) => app.log.warn({ err: error }, 'expiry sweep failed'));
      // Told before each bulk's end is recorded: a crash between tells it again, never not at all.
      if (bulk !== undefined && kafka !== undefined)
        bulk
          .finishExpired((notices) => kafka.notifyBulk(notices))
          .catch((error: unknown) => app.log.warn({ err: error }, 'bulk expiry sweep failed'));
      fx.expireDue(
        kafka === undefined ? undefined : (expired) => kafka.notifyFxExpired(expired),
      ).catch((error: unknown) => app.log.warn({ err: error }, 'fx expiry sweep failed'));
    },
  });
};

/**
 * `tick` every `everyMs`, from when the server is ready and the gate open until the server closes.
 */
const repeating: FastifyPluginAsync<{
  gate: StartGate;
  everyMs: number;
  tick: () => void;
}> = async (app, { gate, everyMs, tick }) => {
  let timer: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    gate.whenOpen(() => {
      timer = setInterval(tick, everyMs);
      timer.unref();
    });
  });
  app.addHook('onClose', async () => clearInterval(timer));
};

/** Another server (the settlement port), listening from when this one is ready until it closes. */
const companionServer: FastifyPluginAsync<{
  server: FastifyInstance;
  listen: { host: string; port: number };
}> = async (app, { server, listen }) => {
  app.addHook('onReady', async () => {
    await server.listen(listen);
  });
  app.addHook('onClose', async () => {
    await server.close();
  });
};

/** A Fastify instance with the service's options, parsers, OpenAPI and FSPIOP error handling. */
async function httpServer(config: Config): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: config.logLevel },
    // Two log lines per request cost more than the ledger on the hot path: opt in with
    // HTTP_LOG_REQUESTS.
    // Through a LogController: the top-level disableRequestLogging option is deprecated
    // (FSTDEP023).
    logController: new LogController({ disableRequestLogging: !config.http.logRequests }),
    // Without request logging no line would carry the request id: the service's own logger serves
    // every request, rather than a pino child (its bindings serialised) made per request for the
    // rare error line.
    ...(config.http.logRequests
      ? {}
      : { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    bodyLimit: config.http.bodyLimitBytes,
    // Stopping runs in onClose hooks, which Fastify would time like plugin loading: the Kafka stop
    // waits for its batches under way, the ledger's close for its last batch.
    pluginTimeout: 0,
    // While closing, requests reach the start gate, which answers them an FSPIOP 2003 (Fastify's
    // own 503 has no FSPIOP error).
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    ...preRoutingErrorOptions,
  });
  app.addContentTypeParser(
    FSPIOP_CONTENT_TYPE,
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'TigerBeetle central-ledger',
        description: 'Mojaloop central-ledger admin and FSPIOP transfer API on TigerBeetle',
        version: VERSION,
      },
    },
  });
  installErrorHandling(app);
  documentResponses(app);
  return app;
}
