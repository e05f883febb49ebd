// Which idempotent requests run right now in this process, so a duplicate can wait for the first instead of running
// twice. A request running in another instance is the idempotency key repository's to wait for (`settledElsewhere`):
// only the database sees across instances.

/**
 * The requests running under an idempotency slot (user and key). The answers are synchronous on purpose: the guard
 * decides between waiting and releasing a stale marker in the same step as it reads the key's record.
 */
export interface InFlightRequests {
  /** Marks the slot as running; call the returned function once the request has stored or released its key. */
  begin(slot: string): () => void;
  /** Resolves when the request running under the slot settles; undefined when none runs. */
  settled(slot: string): Promise<void> | undefined;
}

/** The requests in flight in this single process. */
export class LocalInFlightRequests implements InFlightRequests {
  private readonly running = new Map<string, Promise<void>>();

  /** See `InFlightRequests.begin`; a later `begin` of the same slot replaces the entry, and only its own end removes it. */
  begin(slot: string): () => void {
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.running.set(slot, done);
    return () => {
      if (this.running.get(slot) === done) this.running.delete(slot);
      settle();
    };
  }

  /** See `InFlightRequests.settled`. */
  settled(slot: string): Promise<void> | undefined {
    return this.running.get(slot);
  }
}
