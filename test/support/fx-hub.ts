/**
 * An FX hub in process for unit tests: a service on an embedded ledger whose clock the test moves
 * (`clock.now`), the payer, payee and FXP onboarded through it (`client`, `parties`), and an
 * FxService of its own on the same ledger and store, as another instance's would be, whose
 * prepares and sweeps the test calls itself.
 */
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import type { MetadataStore } from '../../src/ports/metadata';
import { TransferService } from '../../src/domain/transfers/service';
import { FxService } from '../../src/domain/fx/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { FxClient, injecting, type Parties } from './fx-client';

export interface FxHub {
  clock: { now: number };
  ledger: EmbeddedLedger;
  service: Service;
  parties: Parties;
  client: FxClient;
  fx: FxService;
}

/** Onboarded; the caller closes `service`. */
export async function fxHub(store: MetadataStore, name: string): Promise<FxHub> {
  const clock = { now: Date.now() };
  const now = (): number => clock.now;
  const ledger = new EmbeddedLedger(now);
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const parties = FxClient.parties(name);
  const client = new FxClient(injecting(service.app), parties);
  const fx = new FxService(store, ledger, new TransferService(store, ledger, { now }), { now });
  try {
    await client.onboard();
  } catch (error) {
    await service.close();
    throw error;
  }
  return { clock, ledger, service, parties, client, fx };
}
