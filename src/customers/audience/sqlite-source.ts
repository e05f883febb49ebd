// The audience index's source on SQLite: customers read from a snapshot on a second connection, and other processes'
// writes (the user CLI, a restore) noticed through PRAGMA data_version with the generation moved on unexpectedly.
import type { AudienceSource } from './audience-index.ts';
import type { AudienceColumns } from './columns.ts';
import type { ChangeSource } from '../change-feed.ts';
import { generationReader } from '../store/generation.ts';
import { statusIndex } from '../store/rows.ts';
import type { CustomerStatus } from '../../domain/customers.ts';
import { openReadConnection, type Db } from '../../db/database.ts';

const CHUNK = 50_000;

/** The customers of the SQLite database `db`, whose writes of this process `feed` publishes. */
export class SqliteAudienceSource implements AudienceSource {
  private readonly readDataVersion: () => number;
  /** data_version when the columns were last known to hold every write: at the start of a load, or after a check. */
  private dataVersion = -1;

  constructor(
    private readonly db: Db,
    private readonly feed: ChangeSource,
  ) {
    const dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.readDataVersion = () => dataVersion.get() as number;
  }

  /** Whether another connection committed since the last look and the committed generation is not the columns'. */
  changedElsewhere(generation: number): boolean {
    const version = this.readDataVersion();
    if (version === this.dataVersion) return false;
    this.dataVersion = version;
    return this.feed.generation() !== generation;
  }

  /** Reads every customer from a snapshot on a second connection, in chunks between which requests are served. */
  async load(columns: AudienceColumns): Promise<number> {
    this.dataVersion = this.readDataVersion();
    const reader = this.db.memory ? this.db : openReadConnection(this.db);
    try {
      if (reader !== this.db) reader.exec('BEGIN'); // one snapshot across all chunks
      const generation = generationReader(reader)();
      const total = reader.prepare('SELECT count(*) FROM customers').pluck().get() as number;
      columns.clear(Math.max(1024, Math.ceil(total * 1.1)));
      const chunk = reader
        .prepare('SELECT id, country_key, status, total_transactions, amount_cents, last_activity_at FROM customers WHERE id > ? ORDER BY id LIMIT ?')
        .raw();
      // Rows are streamed, not collected per chunk, so loading leaves no large garbage on the heap.
      let after = 0;
      for (;;) {
        let read = 0;
        const rows = chunk.iterate(after, CHUNK) as Iterable<[number, string, CustomerStatus, number, number, number]>;
        for (const [id, key, status, transactions, cents, lastActivityAt] of rows) {
          columns.append(id, key, statusIndex(status), transactions, cents, lastActivityAt);
          after = id;
          read++;
        }
        if (read < CHUNK) break;
        if (reader !== this.db) await new Promise((resolve) => setImmediate(resolve));
      }
      if (reader !== this.db) reader.exec('COMMIT');
      return generation;
    } finally {
      if (reader !== this.db) reader.close();
    }
  }
}
