/**
 * Crash injection, for tests only: FAULT_POINT names one step boundary at which the process
 * kills itself with SIGKILL — no cleanup, no flush, no answer: what `kill -9` or a power cut
 * leaves behind. Each point sits between two durable writes (the ledger's, the metadata's, a
 * notification) so a test can crash there and check that a restart and the clients' retries
 * end where the ledger says. Off in production: with no point configured the hook is a no-op
 * chosen once at start, so the hot path pays one empty call.
 */
export const FAULT_POINTS = [
  /** The ledger holds the reservation; the metadata does not know the transfer. */
  'prepare.after-ledger',
  /** Both hold it; the payer has no answer. */
  'prepare.after-metadata',
  /** The ledger has posted the transfer; the metadata still says RESERVED. */
  'fulfil.after-ledger',
  'fulfil.after-metadata',
  /** The ledger has voided the reservation; the metadata still says RESERVED. */
  'abort.after-ledger',
  'abort.after-metadata',
  /** The expiry is notified to payer and payee; the metadata still says RESERVED. */
  'expiry.after-notify',
  'expiry.after-metadata',
  /** A window close claimed in the metadata (PROCESSING, the next one OPEN); not yet cut. */
  'window.after-claim',
  /** Cut in the ledger; the metadata still says PROCESSING. */
  'window.after-ledger',
  /**
   * A settlement step's money moved in the ledger; the metadata still has the accounts' old states.
   */
  'settlement.after-ledger',
  'settlement.after-metadata',
] as const;

/** The step boundaries of FX conversions (src/fx). */
export const FX_FAULT_POINTS = [
  /** The ledger holds the conversion's reservation; the metadata does not know it. */
  'fx-prepare.after-ledger',
  'fx-prepare.after-metadata',
  /**
   * The ledger has voided the conversion (with its dependent transfer); the metadata says RESERVED.
   */
  'fx-abort.after-ledger',
  /**
   * The dependent transfer's chain posted (voided) both reservations and its record is saved; the
   * conversion's is not.
   */
  'fx-settle.before-metadata',
  'fx-expiry.after-notify',
] as const;
/** The step boundaries of the Kafka edge (src/handlers/kafka). */
export const KAFKA_FAULT_POINTS = [
  /**
   * A bulk topic's chunk answered: its notifications and its offsets written in a transaction
   * (transactions.ts), not yet committed.
   */
  'bulk-answers.before-commit',
] as const;
export type FaultPoint =
  | (typeof FAULT_POINTS)[number]
  | (typeof FX_FAULT_POINTS)[number]
  | (typeof KAFKA_FAULT_POINTS)[number];

export type Fault = (point: FaultPoint) => void;

export const noFault: Fault = () => {};

export function faultAt(configured: FaultPoint | undefined): Fault {
  if (configured === undefined) return noFault;
  return (point) => {
    // Delivered before kill() returns: nothing after this line runs.
    if (point === configured) process.kill(process.pid, 'SIGKILL');
  };
}
