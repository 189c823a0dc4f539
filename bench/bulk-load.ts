/**
 * The bulk side of bench/bulk.ts: bench/kafka-load.ts's transfers grouped into bulks, and a
 * simulator that plays bulk-api-adapter and the payees. Like bulk-api-adapter v17.2.6 it writes a
 * bulk's items to the object store (`individualTransfers`, keyed by a fresh message id) before it
 * produces the bulk-prepare message naming that id; for the payee's PUT it writes the results
 * (`individualTransferFulfils`) and produces bulk-commit. It reads the service's notifications:
 * the payee's forward (bulk-prepare) is answered at once with every fulfilment, and a bulk is
 * done when the payer's final bulk-commit says COMPLETED; its results document tells how many
 * transfers were committed.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Consumer, Producer } from 'kafkajs';
import type { Db } from 'mongodb';
import { memoryMiB } from './procstat';
import {
  batchDelta,
  batchMetrics,
  cpuUse,
  snapshot,
  type CpuUse,
  type LedgerBatches,
} from './phases';
import type { Pids } from './phases';
import { groupJoined, type KafkaTransfer } from './kafka-load';
import { summarise, type LatencySummary } from './load';
import { CURRENCY } from '../test/support/workload';

const BULK_CONTENT_TYPE = 'application/vnd.interoperability.bulkTransfers+json;version=1.1';

export interface BulkTopics {
  bulkPrepare: string;
  bulkFulfil: string;
  notification: string;
}

/** One bulk of the load: its transfers share a payer, a payee and an expiration. */
export interface BenchBulk {
  bulkTransferId: string;
  payer: string;
  payee: string;
  transfers: KafkaTransfer[];
  /** performance.now() when its bulk-prepare was produced, and when its payer's final came. */
  producedAt: number;
  completedAt: number;
  /** Transfers the payer's final results say were committed. */
  committed: number;
  forwards: number;
  finals: number;
}

/** A bulk of `transfers`, all of one payer and payee (bench/kafka-load.ts's `pair`). */
export function newBulk(transfers: KafkaTransfer[]): BenchBulk {
  return {
    bulkTransferId: randomUUID(),
    payer: transfers[0]!.transfer.payer,
    payee: transfers[0]!.transfer.payee,
    transfers,
    producedAt: 0,
    completedAt: 0,
    committed: 0,
    forwards: 0,
    finals: 0,
  };
}

/** central-services-shared's request hash, as bulk-api-adapter puts it in its messages. */
function requestHash(body: unknown): string {
  return createHash('sha256').update(JSON.stringify(body)).digest('base64').slice(0, -1);
}

/** A message as bulk-api-adapter writes it: the body a data URI, the HTTP headers kept. */
function envelope(options: {
  messageId: string;
  from: string;
  to: string;
  type: 'bulk-prepare' | 'bulk-fulfil';
  action: 'bulk-prepare' | 'bulk-commit';
  payload: Record<string, unknown>;
  bulkTransferId?: string;
}): string {
  const json = JSON.stringify(options.payload);
  return JSON.stringify({
    id: options.messageId,
    from: options.from,
    to: options.to,
    type: 'application/json',
    content: {
      ...(options.bulkTransferId === undefined
        ? {}
        : { uriParams: { id: options.bulkTransferId } }),
      headers: {
        'content-type': BULK_CONTENT_TYPE,
        accept: 'application/vnd.interoperability.bulkTransfers+json;version=1',
        date: new Date().toUTCString(),
        'fspiop-source': options.from,
        'fspiop-destination': options.to,
        'content-length': String(Buffer.byteLength(json)),
      },
      payload: `data:${BULK_CONTENT_TYPE};base64,${Buffer.from(json).toString('base64')}`,
    },
    metadata: {
      event: {
        id: randomUUID(),
        type: options.type,
        action: options.action,
        createdAt: new Date().toISOString(),
        state: { status: 'success', code: 0 },
      },
    },
  });
}

/** The fields of a notification the simulator reads. */
interface Notification {
  id?: unknown;
  to?: unknown;
  content?: { payload?: unknown };
  metadata?: { event?: { action?: unknown; state?: { status?: unknown } } };
}

/** A notification's payload: an object, or a data URI holding one. */
function payloadOf(note: Notification): Record<string, unknown> {
  const payload = note.content?.payload;
  if (typeof payload === 'string' && payload.startsWith('data:')) {
    const comma = payload.indexOf(',');
    return JSON.parse(Buffer.from(payload.slice(comma + 1), 'base64').toString('utf8'));
  }
  return (payload ?? {}) as Record<string, unknown>;
}

/** Plays bulk-api-adapter and the payees of the bulks in `byId`. */
export class BulkSimulator {
  readonly byId = new Map<string, BenchBulk>();
  completed = 0;
  /** Notifications of no bulk of ours (late ones of the single-transfer phase), skipped. */
  foreign = 0;
  readonly errors: string[] = [];
  /** The closed loop's next bulks, one for each bulk completed. */
  refill: ((completed: number) => BenchBulk[]) | undefined;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly consumer: Consumer,
    private readonly producer: Producer,
    private readonly db: Db,
    private readonly topics: BulkTopics,
  ) {}

  /** Subscribes from the topic's end: the single-transfer phase's notifications are not ours. */
  async start(partitions: number): Promise<void> {
    const joined = groupJoined(this.consumer);
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topics.notification, fromBeginning: false });
    await this.consumer.run({
      partitionsConsumedConcurrently: partitions,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) this.read(message.value);
      },
    });
    await joined;
  }

  /** Writes `bulk`'s items under a fresh message id, then produces its bulk-prepare. */
  send(bulk: BenchBulk): void {
    this.byId.set(bulk.bulkTransferId, bulk);
    this.track(async () => {
      const messageId = randomUUID();
      const first = bulk.transfers[0]!.transfer;
      const items = bulk.transfers.map(({ transfer: t }) => ({
        transferId: t.transferId,
        transferAmount: { amount: t.amount, currency: CURRENCY },
        ilpPacket: t.body['ilpPacket'],
        condition: t.condition,
      }));
      const body = {
        bulkTransferId: bulk.bulkTransferId,
        bulkQuoteId: randomUUID(),
        payerFsp: bulk.payer,
        payeeFsp: bulk.payee,
        expiration: first.expiration,
      };
      await this.db
        .collection('individualTransfers')
        .insertMany(items.map((payload) => ({ messageId, payload })));
      bulk.producedAt = performance.now();
      await this.producer.send({
        topic: this.topics.bulkPrepare,
        messages: [
          {
            key: bulk.bulkTransferId,
            value: envelope({
              messageId,
              from: bulk.payer,
              to: bulk.payee,
              type: 'bulk-prepare',
              action: 'bulk-prepare',
              // The hash covers the items; the items themselves travel in the object store.
              payload: { ...body, hash: requestHash({ ...body, individualTransfers: items }) },
            }),
          },
        ],
      });
    });
  }

  /** Resolves when `count` bulks are done, or when none completed for `stallMs`. */
  async waitForBulks(count: number, stallMs: number): Promise<boolean> {
    let last = this.completed;
    let lastChange = Date.now();
    while (this.completed < count) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (this.errors.length > 0) return false;
      if (this.completed !== last) {
        last = this.completed;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > stallMs) return false;
    }
    return true;
  }

  private read(value: Buffer | null): void {
    const note = JSON.parse(value?.toString('utf8') ?? 'null') as Notification | null;
    const action = String(note?.metadata?.event?.action);
    const status = note?.metadata?.event?.state?.status;
    const payload = note === null ? {} : payloadOf(note);
    const bulk = this.byId.get(String(payload['bulkTransferId']));
    if (note === null || bulk === undefined) {
      this.foreign++;
      return;
    }
    if (status !== 'success') {
      this.errors.push(
        `${action} ${status} for bulk ${bulk.bulkTransferId}: ${JSON.stringify(payload)}`,
      );
      return;
    }
    if (action === 'bulk-prepare' && note.to === bulk.payee) {
      bulk.forwards++;
      this.track(() => this.fulfil(bulk));
    } else if (action === 'bulk-commit' && note.to === bulk.payer) {
      bulk.finals++;
      if (payload['bulkTransferState'] !== 'COMPLETED')
        this.errors.push(
          `bulk ${bulk.bulkTransferId} ended ${String(payload['bulkTransferState'])}`,
        );
      this.track(() => this.finish(bulk, String(note.id)));
    }
  }

  /** The payee's PUT /bulkTransfers/{id}: every transfer fulfilled. */
  private async fulfil(bulk: BenchBulk): Promise<void> {
    const messageId = randomUUID();
    const results = bulk.transfers.map(({ transfer: t }) => ({
      transferId: t.transferId,
      fulfilment: t.fulfilment,
    }));
    const body = {
      bulkTransferState: 'COMPLETED',
      completedTimestamp: new Date().toISOString(),
      individualTransferResults: results,
    };
    await this.db
      .collection('individualTransferFulfils')
      .insertMany(
        results.map((payload) => ({ messageId, bulkTransferId: bulk.bulkTransferId, payload })),
      );
    const { individualTransferResults, ...rest } = body;
    await this.producer.send({
      topic: this.topics.bulkFulfil,
      messages: [
        {
          key: bulk.bulkTransferId,
          value: envelope({
            messageId,
            from: bulk.payee,
            to: bulk.payer,
            type: 'bulk-fulfil',
            action: 'bulk-commit',
            bulkTransferId: bulk.bulkTransferId,
            payload: {
              bulkTransferId: bulk.bulkTransferId,
              ...rest,
              count: individualTransferResults.length,
              hash: requestHash(body),
            },
          }),
        },
      ],
    });
  }

  /** The payer's final results, read as bulk-api-adapter would; the next bulk goes. */
  private async finish(bulk: BenchBulk, messageId: string): Promise<void> {
    const doc = await this.db
      .collection('bulkTransferResults')
      .findOne({ messageId, destination: bulk.payer });
    const results = (doc?.['individualTransferResults'] ?? []) as { fulfilment?: unknown }[];
    bulk.committed = results.filter((r) => typeof r.fulfilment === 'string').length;
    if (bulk.finals > 1) return;
    bulk.completedAt = performance.now();
    this.completed++;
    for (const next of this.refill?.(1) ?? []) this.send(next);
  }

  private track(work: () => Promise<void>): void {
    const promise = work().catch((error: unknown) => {
      this.errors.push(String(error));
    });
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
  }
}

export interface BulkPhase {
  label: string;
  bulks: number;
  transfers: number;
  committed: number;
  completed: boolean;
  wallS: number;
  transfersPerS: number;
  /** From a bulk's prepare produced to its payer's final notice. */
  latency: LatencySummary;
  cpu: CpuUse | undefined;
  ledger: LedgerBatches | undefined;
  /** The service's RSS (MiB) before the phase and after each tenth of its bulks. */
  rss: { bulks: number; rssMiB: number | undefined }[];
}

/** `bulks` sent `inFlight` at a time, a new one for each completed (a closed loop). */
export async function runBulkPhase(
  label: string,
  simulator: BulkSimulator,
  bulks: readonly BenchBulk[],
  options: { inFlight: number; pids: Pids | undefined; base: string },
): Promise<BulkPhase> {
  const completed0 = simulator.completed;
  const service = options.pids?.service;
  const rss: BulkPhase['rss'] = [
    { bulks: 0, rssMiB: service === undefined ? undefined : memoryMiB(service, 'VmRSS') },
  ];
  const tenth = Math.max(1, Math.floor(bulks.length / 10));
  const metrics0 = await batchMetrics(options.base);
  const before = options.pids === undefined ? undefined : snapshot(options.pids);
  const started = performance.now();
  let next = Math.min(options.inFlight, bulks.length);
  simulator.refill = () => {
    const done = simulator.completed - completed0;
    if (service !== undefined && done % tenth === 0)
      rss.push({ bulks: done, rssMiB: memoryMiB(service, 'VmRSS') });
    return next < bulks.length ? [bulks[next++]!] : [];
  };
  for (const bulk of bulks.slice(0, next)) simulator.send(bulk);
  const completed = await simulator.waitForBulks(completed0 + bulks.length, 60_000);
  simulator.refill = undefined;
  const ended = bulks.reduce((max, b) => Math.max(max, b.completedAt), 0);
  const after = options.pids === undefined ? undefined : snapshot(options.pids);
  const metrics1 = await batchMetrics(options.base);
  const wallS = ((completed ? ended : performance.now()) - started) / 1000;
  const committed = bulks.reduce((n, b) => n + b.committed, 0);
  return {
    label,
    bulks: bulks.length,
    transfers: bulks.reduce((n, b) => n + b.transfers.length, 0),
    committed,
    completed,
    wallS,
    transfersPerS: committed / wallS,
    latency: summarise(
      bulks.filter((b) => b.completedAt > 0).map((b) => b.completedAt - b.producedAt),
    ),
    cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after),
    ledger: batchDelta(metrics0, metrics1),
    rss,
  };
}
