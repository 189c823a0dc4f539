/**
 * Settlement windows: which one is OPEN, whether a commit settles at once (a GROSS model), and
 * the close. docs/settlement.md explains why the ledger decides membership: a close cuts the
 * window in the ledger, a commit lands in the window its own ledger timestamp falls in, and nets
 * are read from the ledger between two cuts.
 */
import type { Ledger } from '../../ports/ledger';
import { FspiopCode, fspiopError, validationError } from '../shared/errors';
import type {
  MetadataStore,
  Participant,
  SettlementModel,
  SettlementWindowRecord,
  WindowContentRecord,
} from '../../ports/metadata';
import { HUB_NAME } from '../participants/service';
import { noFault, type Fault } from '../../util/fault';
import type { SettlementEvents } from './events';

/** How long this instance reuses the settlement models it read (they change at onboarding only). */
const MODEL_CACHE_MS = 1000;
/** A currency with no model of its own may have just got one: read again, at most this often. */
const MODEL_RECHECK_MS = 100;
/**
 * Reads of the OPEN window while aligning its id with the ledger (another instance may do it at
 * once).
 */
const ALIGN_ATTEMPTS = 5;

/**
 * A model is GROSS (settled at once) or NET by granularity; IMMEDIATE NET has no settlement either.
 */
export function settlesAtOnce(model: SettlementModel): boolean {
  return model.settlementGranularity === 'GROSS' || model.settlementDelay === 'IMMEDIATE';
}

/**
 * The model that applies to a currency: the one of that currency, else the default (currency null).
 */
export function modelOf(
  models: readonly SettlementModel[],
  currency: string,
): SettlementModel | undefined {
  return models.find((m) => m.currency === currency) ?? models.find((m) => m.currency === null);
}

export class WindowService {
  /** The OPEN window's id was checked against the ledger's (see alignedWithLedger). */
  private aligned = false;
  private models: { models: SettlementModel[]; readAt: number } | undefined;
  /** Closes of this instance, one at a time (two instances: the store's version check decides). */
  private closing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly fault: Fault = noFault,
    private readonly events?: SettlementEvents,
  ) {}

  /**
   * At start: the OPEN window (the first one is created here), its id checked against the
   * ledger's windows — or, with the ledger not answering, before the first close.
   */
  async start(): Promise<void> {
    await this.store.openSettlementWindow();
    await this.align().catch(() => undefined);
  }

  private async align(): Promise<void> {
    if (this.aligned) return;
    await this.alignedWithLedger();
    this.aligned = true;
  }

  /**
   * The window ids name the ledger's cuts, so the OPEN window must never be one the ledger cut: a
   * metadata store new to a cluster that holds windows (a wiped data dir, MySQL switched on) would
   * start at 1 again. Then the OPEN window takes the id after the ledger's latest cut (the commits
   * since are its); later ids follow. A store that kept up with the ledger is left alone.
   */
  private async alignedWithLedger(): Promise<SettlementWindowRecord> {
    for (let attempt = 0; attempt < ALIGN_ATTEMPTS; attempt++) {
      const open = await this.store.openSettlementWindow();
      const latest = await this.ledger.latestCutWindow();
      if (latest === undefined || open.id > latest) return open;
      const renumbered = await this.store.renumberOpenWindow(open, latest + 1);
      if (renumbered !== undefined) return renumbered;
    }
    throw new Error(
      'the OPEN settlement window kept changing while it was aligned with the ledger',
    );
  }

  /** Whether a commit of this currency settles at once (GROSS); else it lands in a window. */
  async settlesAtOnce(currency: string): Promise<boolean> {
    let models = await this.settlementModels();
    // A model of this very currency added since the cache was read (onboarding): read again.
    if (!models.some((m) => m.currency === currency))
      models = await this.settlementModels(MODEL_RECHECK_MS);
    const model = modelOf(models, currency);
    return model !== undefined && settlesAtOnce(model);
  }

  list(): Promise<SettlementWindowRecord[]> {
    return this.store.settlementWindows();
  }

  windowsOf(ids: readonly number[]): Promise<SettlementWindowRecord[]> {
    return this.store.settlementWindows(ids);
  }

  async get(id: number): Promise<SettlementWindowRecord> {
    const [window] = await this.store.settlementWindows([id]);
    if (window === undefined)
      throw fspiopError(FspiopCode.INTERNAL, `No record for settlementWindowId: ${id} found`);
    return window;
  }

  /**
   * Closes OPEN window `id` and answers the new OPEN one. Refusals change nothing: unknown, not
   * OPEN (also: another instance closed it first), nothing committed in it.
   */
  close(
    id: number,
    reason: string,
    headers: Record<string, string> = {},
  ): Promise<SettlementWindowRecord> {
    const run = this.closing.then(() => this.closeOnce(id, reason, headers));
    this.closing = run.catch(() => undefined);
    return run;
  }

  /** Finishes every close a crash left PROCESSING (each step is idempotent). */
  async resumeCloses(): Promise<number> {
    const stuck = (await this.store.settlementWindows()).filter((w) => w.state === 'PROCESSING');
    for (const window of stuck) await this.finishClose(window);
    return stuck.length;
  }

  private async closeOnce(
    id: number,
    reason: string,
    headers: Record<string, string>,
  ): Promise<SettlementWindowRecord> {
    await this.align();
    await this.resumeCloses();
    const [window] = await this.store.settlementWindows([id]);
    if (window === undefined) throw validationError(`Window ${id} does not exist`);
    if (window.state !== 'OPEN') throw validationError(`Window ${id} is not open`);
    if (!(await this.committedIn(id, currenciesOf(await this.participants()))))
      throw validationError(`Window ${id} is empty`);
    const now = new Date().toISOString();
    const claimed = await this.store.writeSettlement({
      windows: [
        { ...window, state: 'PROCESSING', reason, changedDate: now },
        {
          id: 0,
          state: 'OPEN',
          reason,
          createdDate: now,
          changedDate: now,
          content: [],
          version: 0,
        },
      ],
    });
    // Another instance saved this window since it was read: it closed it first.
    if (claimed === undefined) throw validationError(`Window ${id} is not open`);
    const [processing, opened] = claimed.windows as [
      SettlementWindowRecord,
      SettlementWindowRecord,
    ];
    this.fault('window.after-claim');
    await this.finishClose(processing);
    // central-settlement's event for its own aggregation; here the close is done already, so it
    // only tells who listens.
    await this.events?.windowClosed({ settlementWindowId: id, reason, headers });
    return opened;
  }

  /**
   * Whether anything was committed in OPEN window `id` (central-settlement counts every
   * fulfilment, GROSS ones too), decided by the ledger: a commit saved since its latest cut in a
   * currency, NET or GROSS. Asked only where no NET one landed.
   */
  private async committedIn(id: number, currencies: readonly string[]): Promise<boolean> {
    if ((await this.ledger.windowMoved(id, currencies)).includes(true)) return true;
    return (await this.ledger.grossSinceWindowClose(currencies)).includes(true);
  }

  /**
   * The ledger's part of a close, then the content: the window cut in every currency (in one
   * request: no commit falls between two currencies' cuts), its nets read, and the window saved
   * CLOSED. A cut made already (a close resumed) is `exists`.
   */
  private async finishClose(window: SettlementWindowRecord): Promise<void> {
    const participants = await this.participants();
    const currencies = currenciesOf(participants);
    const outcomes = await this.ledger.execute(
      currencies.map((currency) => ({ kind: 'closeWindow', window: window.id, currency })),
    );
    for (const outcome of outcomes) {
      if (!outcome.ok && outcome.refusal !== 'exists')
        throw new Error(`closing window ${window.id}: the ledger refused (${outcome.refusal})`);
    }
    this.fault('window.after-ledger');
    const content = await this.contentOf(window.id, participants, currencies);
    const now = new Date().toISOString();
    const saved = await this.store.writeSettlement({
      windows: [{ ...window, state: 'CLOSED', changedDate: now, content }],
    });
    if (saved === undefined && (await this.get(window.id)).state === 'PROCESSING')
      throw new Error(`window ${window.id} changed while it was closing`);
  }

  /**
   * Per currency where a NET commit landed in the window, each participant account's net: read
   * per participant, never per transfer.
   */
  private async contentOf(
    window: number,
    participants: readonly Participant[],
    currencies: readonly string[],
  ): Promise<WindowContentRecord[]> {
    const moved = await this.ledger.windowMoved(window, currencies);
    const content: WindowContentRecord[] = [];
    const now = new Date().toISOString();
    for (const [i, currency] of currencies.entries()) {
      if (!moved[i]) continue;
      const holders = participants.flatMap((p) =>
        p.currencies
          .filter((c) => c.currency === currency)
          .map((c) => ({ participant: p, account: c })),
      );
      const nets = await this.ledger.windowNets(
        window,
        holders.map((h) => ({ participant: h.participant.name, currency })),
      );
      // Every account that moved, its transfers cancelling out or not (central-settlement's
      // SETTLEMENT_NET_ZERO); none that did not.
      const amounts = holders.flatMap((h, j) =>
        nets[j]!.volume === 0n
          ? []
          : [
              {
                participant: h.participant.name,
                participantId: h.participant.id,
                accountId: h.account.positionAccountId,
                amount: nets[j]!.net.toString(),
              },
            ],
      );
      const sum = nets.reduce((a, b) => a + b.net, 0n);
      if (sum !== 0n) throw new Error(`window ${window} ${currency}: nets sum to ${sum}, not 0`);
      content.push({
        id: await this.store.nextId(),
        ledgerAccountType: 'POSITION',
        currency,
        state: 'CLOSED',
        createdDate: now,
        changedDate: now,
        settlementId: null,
        nets: amounts,
      });
    }
    return content;
  }

  async settlementModels(maxAgeMs = MODEL_CACHE_MS): Promise<SettlementModel[]> {
    if (this.models !== undefined && Date.now() - this.models.readAt < maxAgeMs)
      return this.models.models;
    const models = await this.store.settlementModels();
    this.models = { models, readAt: Date.now() };
    return models;
  }

  /** The Hub's own pseudo-participant holds no position in a window. */
  private async participants(): Promise<Participant[]> {
    return (await this.store.participants()).filter((p) => p.name !== HUB_NAME);
  }
}

function currenciesOf(participants: readonly Participant[]): string[] {
  return [...new Set(participants.flatMap((p) => p.currencies.map((c) => c.currency)))].sort();
}
