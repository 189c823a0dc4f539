/**
 * An FX hub in process for unit tests: a service on an embedded ledger whose clock the test moves
 * (`clock.now`), the payer, payee and FXP onboarded through it (`client`, `parties`), and an
 * FxService of its own on the same ledger and store, as another instance's would be, whose
 * prepares and sweeps the test calls itself.
 */
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import type { MetadataStore } from '../../src/ports/metadata';
import { TransferService, type TransferServiceOptions } from '../../src/domain/transfers/service';
import type { Ledger } from '../../src/ports/ledger';
import { FxService } from '../../src/domain/fx/service';
import { FxConversions } from '../../src/domain/fx/conversions';
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

/**
 * The transfer and FX services of one more instance on `store` and `ledger`, built as src/app.ts
 * builds them (the conversions' clock is the transfers').
 */
export function fxInstance(
  store: MetadataStore,
  ledger: Ledger,
  options: TransferServiceOptions = {},
): { transfers: TransferService; fx: FxService } {
  const conversions = new FxConversions(store, ledger, options.now ? { now: options.now } : {});
  const transfers = new TransferService(store, ledger, { ...options, dependencies: conversions });
  return { transfers, fx: new FxService(conversions, transfers) };
}

/** Onboarded; the caller closes `service`. */
export async function fxHub(store: MetadataStore, name: string): Promise<FxHub> {
  const clock = { now: Date.now() };
  const now = (): number => clock.now;
  const ledger = new EmbeddedLedger(now);
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const parties = FxClient.parties(name);
  const client = new FxClient(injecting(service.app), parties);
  const { fx } = fxInstance(store, ledger, { now });
  try {
    await client.onboard();
  } catch (error) {
    await service.close();
    throw error;
  }
  return { clock, ledger, service, parties, client, fx };
}
