/**
 * A transfer whose money is another's: the dependent transfer of an FX conversion (src/domain/fx)
 * is reserved against the FXP's target-currency position, not its payer's, and is committed or
 * aborted in one ledger chain with the conversion. The transfer flow asks these hooks (given at
 * construction: FxConversions); it knows nothing else about FX.
 */
import type { Reservation } from '../../ports/ledger';
import type { FxTransferRecord, TransferRecord } from '../../ports/metadata';

export interface Dependency {
  commitRequestId: string;
  /**
   * Who the transfer's reservation debits, in which currency, how much (the conversion's target
   * leg).
   */
  payer: string;
  currency: string;
  amount: bigint;
  /** The transfer's reservation must not outlive the conversion's: its expiration (ms). */
  expiresAtMs: number;
  /** The conversion's own reservation, posted or voided first in the transfer's chain. */
  linked: Reservation;
}

export interface TransferDependencies {
  /**
   * At prepare: the dependency of a transfer id, undefined for a plain transfer; 3100 if its
   * conversion is not fulfilled.
   */
  forPrepare(transferId: string): Promise<Dependency | undefined>;
  /** At commit or abort of a transfer that has one (`dependsOn`). */
  of(record: TransferRecord): Promise<Dependency>;
  /**
   * The ledger posted or voided the transfer with its conversion: the conversion's record, saved.
   */
  settled(record: TransferRecord, outcome: 'committed' | 'aborted'): Promise<FxTransferRecord>;
  /**
   * The ledger released these dependent transfers at their expiration: their conversions are
   * released with them, as central-ledger times both out together.
   */
  expired(records: readonly TransferRecord[]): Promise<void>;
}
