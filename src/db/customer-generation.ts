// The customers generation (`meta.customers_generation`): one more for every transaction that writes customers.
// Also which writes this process has handed to another connection (the import writer) and not yet heard back from,
// so that a reader of the generation can tell "ours, on its way" from "another process wrote".
import type { Db } from './database.ts';

/** Returns a reader of the current generation on this connection (0 before any write). */
export function generationReader(db: Db): () => number {
  const read = db.prepare("SELECT coalesce((SELECT value FROM meta WHERE key = 'customers_generation'), 0)").pluck();
  return () => read.get() as number;
}

/** Returns a function that counts one more write and returns the new generation; call it inside that write's transaction. */
export function generationBumper(db: Db): () => number {
  const bump = db
    .prepare(`INSERT INTO meta (key, value) VALUES ('customers_generation', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1 RETURNING value`)
    .pluck();
  return () => bump.get() as number;
}

interface InFlight {
  count: number;
  settled: Promise<void>;
  settle: () => void;
}

const inFlight = new WeakMap<Db, InFlight>();

/**
 * Records a customer write this process sent to another connection for the database of `db`; call the returned
 * function once its changes have been told to the change listener (or it failed).
 */
export function beginWriteElsewhere(db: Db): () => void {
  let state = inFlight.get(db);
  if (!state) {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    state = { count: 0, settled, settle };
    inFlight.set(db, state);
  }
  state.count++;
  const current = state;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--current.count === 0) {
      inFlight.delete(db);
      current.settle();
    }
  };
}

/** Returns a promise of the moment no such write is in flight any more, or undefined when none is. */
export function writesElsewhereSettled(db: Db): Promise<void> | undefined {
  return inFlight.get(db)?.settled;
}
