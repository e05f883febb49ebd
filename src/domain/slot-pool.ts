// Slots for long-lived work (reply streams), capped per holder and in all. The implementation here counts the slots
// of this process; on PostgreSQL, instances share the per-holder count (db/postgres/stream-slots.ts).

/** What `SlotPool.acquire` answers: a held slot to release when the work ends, or which cap refused it. */
export type SlotClaim = { held: true; release: () => Promise<void> } | { held: false; full: 'holder' | 'pool' };

/** A pool of at most `total` slots, of which one holder (a user) may hold at most `perHolder`. */
export interface SlotPool {
  readonly perHolder: number;
  readonly total: number;
  /** Takes a slot for the holder when both caps allow it; checking and taking are one step. */
  acquire(holder: string): Promise<SlotClaim>;
}

/** The slot pool of a single process. */
export class InMemorySlotPool implements SlotPool {
  private readonly held = new Map<string, number>();
  private all = 0;

  constructor(
    readonly perHolder: number,
    readonly total: number,
  ) {}

  /** See `SlotPool.acquire`; a slot's release frees it once, however often it is called. */
  async acquire(holder: string): Promise<SlotClaim> {
    const mine = this.held.get(holder) ?? 0;
    if (mine >= this.perHolder) return { held: false, full: 'holder' };
    if (this.all >= this.total) return { held: false, full: 'pool' };
    this.held.set(holder, mine + 1);
    this.all++;
    let released = false;
    return {
      held: true,
      release: async () => {
        if (released) return;
        released = true;
        this.all--;
        const left = (this.held.get(holder) ?? 1) - 1;
        if (left > 0) this.held.set(holder, left);
        else this.held.delete(holder);
      },
    };
  }
}
