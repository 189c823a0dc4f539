/**
 * Per-transfer order: the messages of different transfers are handled concurrently (so their
 * commands share ledger batches), those of one transfer one after the other, also when they
 * arrive in partition batches handled at once (a fulfil on its topic, its prepare on another).
 */
export class TransferOrder {
  /** The last work queued for each transfer being handled: its next message waits for it. */
  private readonly chains = new Map<string, Promise<unknown>>();

  /**
   * The answers to `items`, grouped by transfer in the order the transfers first appear, each
   * transfer's in the order of its items.
   */
  async handle<Item extends { transferId: string }, Answer>(
    items: readonly Item[],
    handleOne: (item: Item) => Promise<Answer[]>,
  ): Promise<Answer[]> {
    const byTransfer = new Map<string, Item[]>();
    for (const item of items) {
      const list = byTransfer.get(item.transferId);
      if (list === undefined) byTransfer.set(item.transferId, [item]);
      else list.push(item);
    }
    const answers = await Promise.all(
      [...byTransfer].map(([transferId, list]) =>
        this.inTurn(transferId, async () => {
          const out: Answer[] = [];
          for (const item of list) out.push(...(await handleOne(item)));
          return out;
        }),
      ),
    );
    return answers.flat();
  }

  /**
   * Runs `work` after whatever is under way for the same transfer in a concurrent partition
   * batch; a failure there fails this too, so that both batches are delivered again rather than
   * this one running out of order.
   */
  private inTurn<T>(transferId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(transferId);
    const run = previous === undefined ? work() : previous.then(work);
    this.chains.set(transferId, run);
    const forget = (): void => {
      if (this.chains.get(transferId) === run) this.chains.delete(transferId);
    };
    run.then(forget, forget);
    return run;
  }
}
