// The customers generation (`meta.customers_generation`): one more for every transaction that writes customers, in
// that transaction, so any connection (another process too) can tell whether customers changed since it looked.
import type { Db } from '../../db/database.ts';

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
