// A sliding-window counter per key, kept in memory and bounded in size.

export interface RateLimit {
  /** How many events a key may have within the window. */
  limit: number;
  windowMs: number;
}

/** Counts events per key over a sliding window; the limit is reached when `limit` events lie within it. */
export class SlidingWindowLimiter {
  private readonly events = new Map<string, number[]>();

  constructor(
    private readonly rule: RateLimit,
    private readonly maxKeys = 100_000,
  ) {}

  /** Returns the whole seconds until the key may act again, or 0 when it is under its limit. */
  retryAfterSeconds(key: string, now: Date): number {
    const recent = this.recent(key, now.getTime());
    if (recent.length < this.rule.limit) return 0;
    const oldest = recent[recent.length - this.rule.limit] ?? now.getTime();
    return Math.max(1, Math.ceil((oldest + this.rule.windowMs - now.getTime()) / 1000));
  }

  /** Records one event for the key at `now`. */
  record(key: string, now: Date): void {
    const recent = this.recent(key, now.getTime());
    recent.push(now.getTime());
    this.events.delete(key); // re-insert so Map order is least recently used first
    this.events.set(key, recent.slice(-this.rule.limit));
    if (this.events.size > this.maxKeys) this.evictLeastRecent();
  }

  /** Forgets the key's events, as after a successful sign-in. */
  reset(key: string): void {
    this.events.delete(key);
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
