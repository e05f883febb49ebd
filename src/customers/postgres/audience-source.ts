// The audience index's source on PostgreSQL: customers read in one REPEATABLE READ snapshot with a cursor, together
// with that snapshot's generation, so the index applies exactly the published generations above it (none lost, none
// twice). Every write of every instance reaches the index through the change feed; the only changes it does not
// publish one by one are the reloads it signals (a 'reload' row, a log pruned past this instance).
import type { AudienceSource } from '../audience/audience-index.ts';
import type { AudienceColumns } from '../audience/columns.ts';
import { statusIndex } from '../store/rows.ts';
import type { CustomerStatus } from '../../domain/customers.ts';
import type { PostgresEngine } from '../../db/pg-engine.ts';
import type { PgChangeFeed } from './change-feed.ts';

/** A customer as the cursor fetches it: id, country key, status, transactions, cents, last activity. */
type CustomerRow = [number, string, CustomerStatus, number, number, number];

/** Rows per cursor fetch: the event loop serves requests between fetches. */
const CHUNK = 50_000;

/** The customers of the PostgreSQL database of `engine`, whose writes `feed` publishes. */
export class PgAudienceSource implements AudienceSource {
  constructor(
    private readonly engine: PostgresEngine,
    private readonly feed: PgChangeFeed,
  ) {}

  /**
   * Columns that reflect a generation below the published one, with no queued write to bring them there, missed
   * something (they were loaded before the feed started): reload.
   */
  changedElsewhere(generation: number): boolean {
    return generation < this.feed.generation();
  }

  onReload(listener: (generation: number) => void): () => void {
    return this.feed.onReload(listener);
  }

  /**
   * Reads the generation and every customer from one snapshot. Its own transaction on the pool, never one the
   * caller's context has open (a count inside a write must not load through that write's uncommitted state).
   */
  async load(columns: AudienceColumns): Promise<number> {
    return this.engine.transaction('read only', async (tx) => {
      const [marks] = await tx<{ generation: number; total: number }[]>`
        SELECT coalesce((SELECT value FROM meta WHERE key = 'customers_generation'), 0) AS generation,
               coalesce((SELECT sum(customers) FROM customer_totals), 0)::bigint AS total`;
      const { generation, total } = marks!;
      columns.clear(Math.max(1024, Math.ceil(total * 1.1)));
      const rows = tx`SELECT id, country_key, status, total_transactions, amount_cents, last_activity_at FROM customers ORDER BY id`.values();
      for await (const chunk of rows.cursor(CHUNK) as AsyncIterable<CustomerRow[]>) {
        for (const [id, key, status, transactions, cents, lastActivityAt] of chunk) {
          columns.append(id, key, statusIndex(status), transactions, cents, lastActivityAt);
        }
      }
      return generation;
    });
  }
}
