/**
 * What a settlement step tells the rest of the hub. The domain says what happened; the Kafka
 * edge (src/handlers/kafka/settlement-notifications.ts) turns it into central-settlement's
 * messages, and with Kafka off nobody listens.
 */

/** One DFSP account's position after a settlement step moved it. */
export interface PositionChange {
  participant: string;
  currency: string;
  /** The position as central-ledger reports it (committed plus prepared), minor units. */
  position: bigint;
}

/** A settlement window was closed by an operator's request. */
export interface WindowClosed {
  settlementWindowId: number;
  reason: string;
  headers: Record<string, string>;
}

/** Resolves once those who listen have the event; a failure is the listener's to log. */
export interface SettlementEvents {
  positionsChanged(changes: PositionChange[]): Promise<void>;
  windowClosed(event: WindowClosed): Promise<void>;
}
