// Rate counters: a sliding window of events per key. The window's arithmetic is one pure function (`slideWindow`),
// shared by the counter of one process here and the one every instance shares on PostgreSQL
// (db/postgres/rate-counters.ts), so both refuse alike and ask for the same Retry-After.

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

/** A key's window after an attempt: the events to keep (oldest first) and the whole seconds to wait (0: recorded). */
export interface WindowAfterAttempt {
  wait: number;
  events: number[];
}

/**
 * Slides the window of a key's `events` (epoch ms, oldest first) to `now` and tries to record one more: recorded
 * (wait 0) while fewer than `limit` events lie within the window, else refused with the whole seconds until the
 * oldest counted event leaves it. Keeps at most `limit` events: older ones can never decide a refusal.
 */
export function slideWindow(events: readonly number[], now: number, rule: RateLimit): WindowAfterAttempt {
  // Sorted: instances' clocks differ a little, so an event another recorded may lie after `now`.
  const recent = events.filter((time) => time > now - rule.windowMs).sort((a, b) => a - b);
  if (recent.length < rule.limit) return { wait: 0, events: [...recent, now].sort((a, b) => a - b).slice(-rule.limit) };
  const oldest = recent[recent.length - rule.limit] ?? now;
  return { wait: Math.max(1, Math.ceil((oldest + rule.windowMs - now) / 1000)), events: recent };
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
    const { wait, events } = slideWindow(this.events.get(key) ?? [], now.getTime(), this.rule);
    if (wait === 0) this.record(key, events);
    return wait;
  }

  /** See `RateCounter.reset`. */
  async reset(key: string): Promise<void> {
    this.events.delete(key);
  }

  private record(key: string, events: number[]): void {
    this.events.delete(key); // re-insert so Map order is least recently used first
    this.events.set(key, events);
    if (this.events.size > this.maxKeys) this.evictLeastRecent();
  }

  private evictLeastRecent(): void {
    for (const key of this.events.keys()) {
      if (this.events.size <= this.maxKeys) return;
      this.events.delete(key);
    }
  }
}
