/**
 * Whether the metadata and the ledger are the same history (docs/decisions/0007): a random
 * identity recorded in both at a hub's first start — in the ledger first, then in the metadata —
 * and compared at every start, before the start-up work writes to the ledger. A store whose
 * participants and hub accounts live in another ledger would otherwise be served: a ledger
 * formatted anew answers every transfer and onboarding step `not_found`.
 */
import { randomBytes } from 'node:crypto';
import { LEDGER_MODEL, MODEL_BEFORE_THREE_EVENTS, type Ledger } from '../../ports/ledger';
import type { HubAccount, MetadataStore, Participant } from '../../ports/metadata';
import { HUB_NAME } from './service';

/** The metadata and the ledger are not the same history: the service must not serve. */
export class LedgerMismatchError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'LedgerMismatchError';
  }
}

/** What the messages call each store: where it is, as the operator configured it. */
export interface IdentityPlaces {
  /** E.g. "the ledger at 10.0.0.1:3000,… (TigerBeetle cluster 0)". */
  ledger: string;
  /** E.g. "the MySQL metadata at db:3306/central_ledger". */
  metadata: string;
}

/**
 * How the identity was found: both held it (`matched`), a new hub recorded one (`created`), a
 * store new to a ledger took the ledger's (`joined`), or a deployment from before identities had
 * its ledger checked and one recorded in both (`adopted`).
 */
export type IdentityOutcome = 'matched' | 'created' | 'joined' | 'adopted';

export interface IdentityCheck {
  identity: bigint;
  outcome: IdentityOutcome;
}

/** An identity as the messages and logs show it. */
export function identityText(identity: bigint | undefined): string {
  return identity === undefined ? 'none' : `0x${identity.toString(16).padStart(32, '0')}`;
}

/**
 * The identity verified at start, and checked again on demand (/health) so that a ledger replaced
 * under a running service is noticed.
 */
export class LedgerIdentity {
  private verified: bigint | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly store: MetadataStore,
    private readonly places: IdentityPlaces,
  ) {}

  async verify(): Promise<IdentityCheck> {
    const check = await verifyLedgerIdentity(this.ledger, this.store, this.places);
    await verifyLedgerModel(this.ledger, this.places);
    this.verified = check.identity;
    return check;
  }

  /**
   * One lookup: throws LedgerMismatchError where the ledger no longer holds the identity verified
   * at start (nothing before that).
   */
  async recheck(): Promise<void> {
    if (this.verified === undefined) return;
    const held = await this.ledger.identity();
    if (held !== this.verified)
      throw new LedgerMismatchError(mismatch(this.places, this.verified, held));
  }
}

/**
 * Compares the identities, recording one where none is yet; throws LedgerMismatchError where the
 * two are not the same history. Instances starting at once over one store and one ledger record
 * one identity: the ledger keeps the first it was given and answers it to every other, and the
 * metadata records what the ledger answered. A crash between the two records leaves the ledger's
 * alone, which the next start finds and takes (the metadata it pairs with is the one that was
 * being recorded: new, or written before identities and checked against the ledger).
 */
export async function verifyLedgerIdentity(
  ledger: Ledger,
  store: MetadataStore,
  places: IdentityPlaces,
): Promise<IdentityCheck> {
  // The metadata first, then the ledger: the reverse of the order they are recorded in, so that
  // an identity another instance has just recorded in the metadata is in the ledger when read.
  const recorded = await store.ledgerIdentity();
  const held = await ledger.identity();
  if (recorded !== undefined) {
    if (held === recorded) return { identity: held, outcome: 'matched' };
    throw new LedgerMismatchError(mismatch(places, recorded, held));
  }
  const [hubs, participants] = await Promise.all([store.hubAccounts(), store.participants()]);
  // Nothing in it names a ledger account.
  const empty = hubs.length === 0 && participants.every((p) => p.currencies.length === 0);
  const missing = empty ? [] : await missingFromLedger(ledger, hubs, participants);
  if (missing.length > 0)
    throw new LedgerMismatchError(
      `${places.ledger} is not the ledger ${places.metadata} was written with: the metadata ` +
        `records no ledger identity (written before identities) and accounts the ledger does not ` +
        `hold (${summary(missing)}); ` +
        (held === undefined
          ? 'the ledger holds no identity'
          : `the ledger holds identity ${identityText(held)} (another hub’s)`) +
        `. ${WAY_OUT}`,
    );
  const identity = held ?? (await ledger.recordIdentity(randomIdentity()));
  const stored = await store.recordLedgerIdentity(identity);
  if (stored !== identity)
    throw new LedgerMismatchError(
      `${places.metadata} recorded ledger identity ${identityText(stored)} meanwhile, while ` +
        `${places.ledger} holds ${identityText(identity)}: another instance started it over ` +
        `another ledger. ${WAY_OUT}`,
    );
  let outcome: IdentityOutcome = 'adopted';
  if (empty) outcome = held === undefined ? 'created' : 'joined';
  return { identity, outcome };
}

/**
 * The ledger must be written under this version's model (docs/decisions/0008): one written under
 * the model before is refused until it is migrated (a start would read its accounts wrongly and
 * write chains the other model's figures cannot read); a new one records the model.
 */
export async function verifyLedgerModel(ledger: Ledger, places: IdentityPlaces): Promise<void> {
  const held = (await ledger.ledgerModel()) ?? (await ledger.recordLedgerModel());
  if (held === LEDGER_MODEL) return;
  throw new LedgerMismatchError(
    held === MODEL_BEFORE_THREE_EVENTS
      ? `${places.ledger} was written under the ledger model before the 3-event one: stop every ` +
        'instance of the version before, run `npm run migrate:ledger` (docs/operations.md, ' +
        '"Upgrading to the 3-event ledger model"), then start this version'
      : `${places.ledger} records ledger model ${held}, this version writes model ` +
        `${LEDGER_MODEL}: run the version that wrote it`,
  );
}

function mismatch(places: IdentityPlaces, recorded: bigint, held: bigint | undefined): string {
  const holds =
    held === undefined
      ? 'holds none (it was formatted anew, or is another hub’s from before identities)'
      : `holds ${identityText(held)} (another hub’s)`;
  return (
    `${places.ledger} is not the ledger ${places.metadata} was written with: the metadata ` +
    `records ledger identity ${identityText(recorded)}, the ledger ${holds}. ${WAY_OUT}`
  );
}

const WAY_OUT =
  'Point the service at the ledger this metadata was written with (TB_ADDRESSES and ' +
  'TB_CLUSTER_ID, or its data files restored; the embedded ledger: the DATA_DIR holding both ' +
  'journals), or at the metadata written with this ledger; to start a new hub on this ledger, ' +
  'start with an empty metadata store (docs/operations.md, "A ledger that is not ours").';

/**
 * The accounts the metadata names that the ledger lacks: every hub account's currency, every
 * participant's currency. Each is opened in the ledger before the metadata records it, so a
 * ledger of the same history holds them all.
 */
async function missingFromLedger(
  ledger: Ledger,
  hubs: readonly HubAccount[],
  participants: readonly Participant[],
): Promise<string[]> {
  const currencies = [...new Set(hubs.map((h) => h.currency))];
  const refs = participants
    .filter((p) => p.name.toLowerCase() !== HUB_NAME.toLowerCase())
    .flatMap((p) => p.currencies.map((c) => ({ participant: p.name, currency: c.currency })));
  const [opened, balances] = await Promise.all([
    ledger.hubsOpened(currencies),
    ledger.balances(refs),
  ]);
  return [
    ...currencies.filter((_, i) => !opened[i]).map((currency) => `${HUB_NAME} ${currency}`),
    ...refs
      .filter((_, i) => balances[i] === undefined)
      .map((r) => `${r.participant} ${r.currency}`),
  ];
}

function summary(missing: string[]): string {
  const shown = missing.slice(0, 3).join(', ');
  return missing.length > 3 ? `${shown} and ${missing.length - 3} more` : shown;
}

/** 128 random bits; 0 and 2^128-1 are TigerBeetle's reserved values. */
function randomIdentity(): bigint {
  for (;;) {
    const identity = BigInt(`0x${randomBytes(16).toString('hex')}`);
    if (identity !== 0n && identity !== (1n << 128n) - 1n) return identity;
  }
}
