/**
 * Settlement windows: which one is OPEN, where a commit lands (a window, or settled at once
 * under a GROSS model), and the close. docs/settlement.md explains why the ledger decides
 * membership: a window's gate is closed in TigerBeetle, and nets are read from its accounts.
 */
import type { CommitSettlement, Ledger, LedgerCommand } from '../../ports/ledger';
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
 * Participants per openWindow command: their accounts go to TigerBeetle in requests of at most
 * 8,189.
 */
const PARTICIPANTS_PER_COMMAND = 4000;

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
  private openId: number | undefined;
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
   * ledger's windows — or, with the ledger not answering, before the first commit is placed.
   */
  async start(): Promise<void> {
    this.openId = (await this.store.openSettlementWindow()).id;
    await this.align().catch(() => undefined);
  }

  private async align(): Promise<void> {
    if (this.aligned) return;
    this.openId = (await this.alignedWithLedger()).id;
    this.aligned = true;
  }

  /**
   * The window ids name the ledger's window accounts, so the OPEN window must never be one the
   * ledger closed: a metadata store new to a cluster that holds windows (a wiped data dir, MySQL
   * switched on) would start at 1 again. Then the OPEN window takes the ledger's latest id if that
   * window is still open there (its transfers stay in it), else the next; later ids follow. A
   * store that kept up with the ledger is left alone: its OPEN window is the ledger's latest, or
   * newer (its gates not yet opened).
   */
  private async alignedWithLedger(): Promise<SettlementWindowRecord> {
    for (let attempt = 0; attempt < ALIGN_ATTEMPTS; attempt++) {
      const open = await this.store.openSettlementWindow();
      const latest = await this.ledger.latestWindow();
      const keptUp =
        latest === undefined ||
        open.id > latest.window ||
        (open.id === latest.window && latest.open);
      if (keptUp) return open;
      const renumbered = await this.store.renumberOpenWindow(
        open,
        latest.open ? latest.window : latest.window + 1,
      );
      if (renumbered !== undefined) return renumbered;
    }
    throw new Error(
      'the OPEN settlement window kept changing while it was aligned with the ledger',
    );
  }

  /**
   * Where a commit of this currency lands: settled at once (GROSS), or the window this instance
   * believes OPEN.
   */
  async place(currency: string): Promise<CommitSettlement> {
    let models = await this.settlementModels();
    // A model of this very currency added since the cache was read (onboarding): read again.
    if (!models.some((m) => m.currency === currency))
      models = await this.settlementModels(MODEL_RECHECK_MS);
    const model = modelOf(models, currency);
    if (model !== undefined && settlesAtOnce(model)) return { gross: true };
    if (!this.aligned) await this.align();
    return { window: this.openId ?? (await this.refreshOpen()) };
  }

  /**
   * A commit refused for its window: closed meanwhile (the next OPEN one, from the metadata), or
   * an account of it not opened yet (opened now). Missing accounts are opened only in a window
   * the metadata still has OPEN: a close closes the gates of the currencies participants held
   * when it read them, after it took the window out of OPEN, so a currency onboarded since has
   * no gate there, and opening one would let the commit land in a window saved CLOSED without
   * it, settled never. Such a commit moves to the OPEN window instead.
   */
  async replace(
    currency: string,
    tried: { window: number },
    refusal: 'window_closed' | 'window_missing',
    parties: readonly string[],
  ): Promise<CommitSettlement> {
    const open = await this.refreshOpen();
    if (refusal === 'window_closed' || open !== tried.window) return { window: open };
    await this.ledger.execute([
      { kind: 'openWindow', window: open, currency, participants: parties },
    ]);
    return { window: open };
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

  /**
   * Opens the OPEN window's accounts of every participant (a commit would open a missing one
   * itself, after one refusal): after a start, in the background, as a close does for the next.
   */
  async openAccounts(): Promise<void> {
    await this.align();
    const participants = await this.participants();
    await this.executeAll(
      openingOf(await this.refreshOpen(), participants, currenciesOf(participants)),
      'opening the window',
    );
  }

  private async executeAll(commands: readonly LedgerCommand[], what: string): Promise<void> {
    for (const outcome of await this.ledger.execute(commands)) {
      if (!outcome.ok && outcome.refusal !== 'exists')
        throw new Error(`${what}: the ledger refused (${outcome.refusal})`);
    }
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
    this.openId = opened.id;
    this.fault('window.after-claim');
    await this.finishClose(processing);
    // central-settlement's event for its own aggregation; here the close is done already, so it
    // only tells who listens.
    await this.events?.windowClosed({ settlementWindowId: id, reason, headers });
    return opened;
  }

  /**
   * Whether anything was committed in OPEN window `id` (central-settlement counts every
   * fulfilment, GROSS ones too), decided by the ledger: a NET commit moved a gate of the window;
   * a GROSS one has no window legs, but was saved after the ledger last closed a gate in its
   * currency (the previous window's) — the NET rule (a commit lands in the window whose gate is
   * open when it is saved) in the ledger's own order. Asked only where no gate moved.
   */
  private async committedIn(id: number, currencies: readonly string[]): Promise<boolean> {
    if ((await this.ledger.windowVolumes(id, currencies)).some((v) => v !== 0n)) return true;
    return (await this.ledger.grossSinceWindowClose(currencies)).includes(true);
  }

  /**
   * The ledger's part of a close, then the content: the next window's accounts, every gate of
   * this one closed for good, its nets read, and the window saved CLOSED.
   */
  private async finishClose(window: SettlementWindowRecord): Promise<void> {
    const participants = await this.participants();
    const currencies = currenciesOf(participants);
    const next = (await this.store.openSettlementWindow()).id;
    const closing: LedgerCommand[] = currencies.map((currency) => ({
      kind: 'closeWindow',
      window: window.id,
      currency,
    }));
    await this.executeAll(
      [...openingOf(next, participants, currencies), ...closing],
      `closing window ${window.id}`,
    );
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
   * Per currency that moved in the window, each participant account's net: one lookup per account,
   * never a transfer.
   */
  private async contentOf(
    window: number,
    participants: readonly Participant[],
    currencies: readonly string[],
  ): Promise<WindowContentRecord[]> {
    const volumes = await this.ledger.windowVolumes(window, currencies);
    const content: WindowContentRecord[] = [];
    const now = new Date().toISOString();
    for (const [i, currency] of currencies.entries()) {
      if (volumes[i] === 0n) continue;
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

  private async refreshOpen(): Promise<number> {
    this.openId = (await this.store.openSettlementWindow()).id;
    return this.openId;
  }

  async settlementModels(maxAgeMs = MODEL_CACHE_MS): Promise<SettlementModel[]> {
    if (this.models !== undefined && Date.now() - this.models.readAt < maxAgeMs)
      return this.models.models;
    const models = await this.store.settlementModels();
    this.models = { models, readAt: Date.now() };
    return models;
  }

  /** The Hub's own pseudo-participant has no window accounts. */
  private async participants(): Promise<Participant[]> {
    return (await this.store.participants()).filter((p) => p.name !== HUB_NAME);
  }
}

/** The openWindow commands of a window for every participant holding each currency. */
function openingOf(
  window: number,
  participants: readonly Participant[],
  currencies: readonly string[],
): LedgerCommand[] {
  return currencies.flatMap((currency) => {
    const holders = participants
      .filter((p) => p.currencies.some((c) => c.currency === currency))
      .map((p) => p.name);
    const commands: LedgerCommand[] = [];
    for (let i = 0; i < holders.length; i += PARTICIPANTS_PER_COMMAND)
      commands.push({
        kind: 'openWindow',
        window,
        currency,
        participants: holders.slice(i, i + PARTICIPANTS_PER_COMMAND),
      });
    return commands;
  });
}

function currenciesOf(participants: readonly Participant[]): string[] {
  return [...new Set(participants.flatMap((p) => p.currencies.map((c) => c.currency)))].sort();
}
