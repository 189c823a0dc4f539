import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { buildService } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import {
  healthAnswer as answer,
  healthRoutes,
  type HealthSource,
} from '../../src/handlers/http/health';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { Ledger } from '../../src/ports/ledger';

/** /live and /health told apart: only a fault of the process itself fails liveness. */
async function probe(
  services: { name: string; status: 'OK' | 'DOWN' }[],
  faults: string[],
): Promise<{ live: { status: number; body: unknown }; health: number }> {
  const app = Fastify();
  const health: HealthSource = { check: async () => services, processFaults: () => faults };
  await app.register(healthRoutes, {
    source: health,
    health: answer({ source: health, version: 'test' }),
  });
  try {
    const live = await app.inject({ method: 'GET', url: '/live' });
    const healthAnswer = await app.inject({ method: 'GET', url: '/health' });
    return {
      live: { status: live.statusCode, body: JSON.parse(live.body) },
      health: healthAnswer.statusCode,
    };
  } finally {
    await app.close();
  }
}

test('/live is 200 while only a dependency is down (a restart would not mend it), /health 502', async () => {
  const { live, health } = await probe(
    [
      { name: 'ledger:tigerbeetle', status: 'DOWN' },
      { name: 'broker:kafka', status: 'DOWN' },
    ],
    [],
  );
  assert.deepEqual(live, { status: 200, body: { status: 'OK' } });
  assert.equal(health, 502);
});

test('/live is 503 with the fault when the process itself is broken (Kafka consumer stopped for good)', async () => {
  const fault = 'Kafka consumer stopped for good: The coordinator is not aware of this member';
  const { live, health } = await probe([{ name: 'broker:kafka', status: 'DOWN' }], [fault]);
  assert.deepEqual(live, { status: 503, body: { status: 'DOWN', faults: [fault] } });
  assert.equal(health, 502);
});

test('/live is 503 naming it once the ledger says its connection is lost for good (an eviction)', async () => {
  let lost: string | undefined;
  const ledger = Object.create(new EmbeddedLedger()) as Ledger;
  ledger.lost = () => lost;
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger,
    store: new MemoryMetadataStore(),
  });
  try {
    const live = async (): Promise<{ status: number; body: unknown }> => {
      const answer = await service.app.inject({ method: 'GET', url: '/live' });
      return { status: answer.statusCode, body: JSON.parse(answer.body) };
    };
    assert.deepEqual(await live(), { status: 200, body: { status: 'OK' } });
    lost = 'the ledger evicted this process';
    assert.deepEqual(await live(), { status: 503, body: { status: 'DOWN', faults: [lost] } });
  } finally {
    await service.close();
  }
});
