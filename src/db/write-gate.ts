// Write turns: how the service's connection and the import writer thread of the same process share SQLite's one
// write lock. One `WriteGate` is built at start-up (engine.ts) and handed to the import writer; nothing else holds
// this state, and nothing here is SQL.
//
// A job's transactions on the writer run for up to half a second (fewer, larger transactions write each index page
// once for more rows), so a write of the service must not wait for one to end: every write transaction of the
// service first says it wants the lock (`WANTED`, counted), and if the writer is in such a transaction (`HELD`) waits
// for it to commit without blocking the event loop. The writer checks `WANTED` between rows, commits soon after (see
// customers/imports/csv-job.ts WAIT_BUDGET_MS), then lets the waiting writes go first. Both threads see one
// SharedArrayBuffer.

const WANTED = 0;
const HELD = 1;
/** Import requests (JSON imports) posted to the writer thread and not yet taken from its queue. */
const QUEUED = 2;
const CELLS = 3;
/** The longest a write of the service waits for the writer's transaction before going to SQLite's busy handler. */
const TURN_WAIT_MS = 5000;

type WaitAsync = (cells: Int32Array, index: number, value: number, timeout: number) => { async: false; value: string } | { async: true; value: Promise<string> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** The service's side of the write turns. */
export class WriteGate {
  /** The cells both threads see: handed to the writer thread, which wraps them in `WriterTurns`. */
  readonly shared = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.shared);

  /**
   * Resolves once a write may run without waiting for a transaction of the import writer, which it has asked to
   * commit; the event loop serves other requests meanwhile. Returns the function to call once the write has run
   * (until then the writer lets it go first).
   */
  async turn(): Promise<() => void> {
    const cells = this.cells;
    Atomics.add(cells, WANTED, 1);
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      Atomics.sub(cells, WANTED, 1);
      Atomics.notify(cells, WANTED);
    };
    try {
      const waited = waitAsync(cells, HELD, 1, TURN_WAIT_MS);
      if (waited.async) await waited.value;
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** An import request is being posted to the writer: a job's transaction lets it in soon. */
  importPosted(): void {
    Atomics.add(this.cells, QUEUED, 1);
  }

  /** The writer thread is gone, and the requests it had not taken with it. */
  writerGone(): void {
    Atomics.store(this.cells, QUEUED, 0);
    new WriterTurns(this.shared).release();
  }
}

/** The import writer's side of the write turns (see WANTED and HELD above). */
export class WriterTurns {
  private readonly cells: Int32Array;

  constructor(shared: SharedArrayBuffer) {
    this.cells = new Int32Array(shared);
  }

  /** Whether a write of the service is waiting for the lock (or holds it) now. */
  wanted(): boolean {
    return Atomics.load(this.cells, WANTED) > 0;
  }

  /** Whether import requests wait in the writer's queue (posted, not yet taken): a job's transaction lets them in. */
  importsQueued(): boolean {
    return Atomics.load(this.cells, QUEUED) > 0;
  }

  /** An import request was taken from the queue. */
  importTaken(): void {
    Atomics.sub(this.cells, QUEUED, 1);
  }

  /**
   * Marks the start of a transaction that gives way when asked; waits first while writes of the service want the
   * lock, for up to `patienceMs` in all (then starts anyway: those writes wait at most one transaction). The writer
   * thread has no event loop to keep free, so it waits blocking.
   */
  hold(patienceMs: number): void {
    const until = performance.now() + patienceMs;
    for (;;) {
      for (let wanted = Atomics.load(this.cells, WANTED); wanted > 0; wanted = Atomics.load(this.cells, WANTED)) {
        const left = until - performance.now();
        if (left <= 0) break;
        Atomics.wait(this.cells, WANTED, wanted, left);
      }
      Atomics.store(this.cells, HELD, 1);
      // A write of the service that counted itself after the loop above saw HELD at 0 and goes ahead: let it.
      if (!this.wanted() || performance.now() >= until) return;
      this.release();
    }
  }

  /** Marks the transaction's end (committed or rolled back) and wakes the writes of the service waiting for it. */
  release(): void {
    Atomics.store(this.cells, HELD, 0);
    Atomics.notify(this.cells, HELD);
  }
}
