// Rate counters: a sliding window of events per key. The interface lets instances share one store later; the
// implementation here keeps the window in this process's memory, bounded in size.

export interface RateLimit {
  /** How many events a key may have within the window. */
  limit: number;
  windowMs: number;
}

/**
 * Counts events per key over a sliding window. Checking and recording are one call so a shared store can do both
 * atomically: parallel attempts cannot all see room under the limit.
 */
export interface RateCounter {
  /** Records an event for the key at `now` and returns 0, or returns the whole seconds to wait (recording nothing) when the key is at its limit. */
  attempt(key: string, now: Date): Promise<number>;
  /** Forgets the key's events, as after a successful sign-in. */
  reset(key: string): Promise<void>;
}

/** The rate counter of a single process: the limit is reached when `limit` events lie within the window. */
export class SlidingWindowLimiter implements RateCounter {
  private readonly events = new Map<string, number[]>();

  constructor(
    private readonly rule: RateLimit,
    private readonly maxKeys = 100_000,
  ) {}

  /** See `RateCounter.attempt`; nothing awaits between the check and the record. */
  async attempt(key: string, now: Date): Promise<number> {
    const wait = this.retryAfterSeconds(key, now);
    if (wait === 0) this.record(key, now);
    return wait;
  }

  /** See `RateCounter.reset`. */
  async reset(key: string): Promise<void> {
    this.events.delete(key);
  }

  private retryAfterSeconds(key: string, now: Date): number {
    const recent = this.recent(key, now.getTime());
    if (recent.length < this.rule.limit) return 0;
    const oldest = recent[recent.length - this.rule.limit] ?? now.getTime();
    return Math.max(1, Math.ceil((oldest + this.rule.windowMs - now.getTime()) / 1000));
  }

  private record(key: string, now: Date): void {
    const recent = this.recent(key, now.getTime());
    recent.push(now.getTime());
    this.events.delete(key); // re-insert so Map order is least recently used first
    this.events.set(key, recent.slice(-this.rule.limit));
    if (this.events.size > this.maxKeys) this.evictLeastRecent();
  }

  private recent(key: string, now: number): number[] {
    return (this.events.get(key) ?? []).filter((time) => time > now - this.rule.windowMs);
  }

  private evictLeastRecent(): void {
    for (const key of this.events.keys()) {
      if (this.events.size <= this.maxKeys) return;
      this.events.delete(key);
    }
  }
}
