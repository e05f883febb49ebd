// The one module that opens the database: pragmas, then upgrades, then schema.sql.
//
// Opening, pragmas and upgrades; nothing else. How statements and transactions run is engine.ts's (the seam), and
// who may write when is write-gate.ts's.
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

/** The schema version this release writes; `PRAGMA user_version` holds the version of a database. */
export const SCHEMA_VERSION = 8;

/**
 * Steps that bring a database from version N to N + 1, for changes `CREATE ... IF NOT EXISTS`
 * in schema.sql cannot make by itself (new columns, rewritten data). New tables and indexes need no step.
 */
const UPGRADES: Record<number, (db: Db) => void> = {
  // 3 -> 4: an assistant reply cut at the token budget is marked. Older databases get the table from schema.sql.
  3: (db) => addColumn(db, 'chat_messages', 'truncated', 'INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1))'),
  // 4 -> 5: approval freezes the campaign's audience.
  4: (db) => {
    addColumn(db, 'campaigns', 'audience_conditions', 'TEXT CHECK (audience_conditions IS NULL OR json_valid(audience_conditions))');
    addColumn(db, 'campaigns', 'audience_description', 'TEXT');
    addColumn(db, 'campaigns', 'audience_size', 'INTEGER CHECK (audience_size IS NULL OR audience_size >= 0)');
    addColumn(db, 'campaigns', 'approved_at', 'INTEGER');
  },
  // 7 -> 8: an import job may update stored customers, and counts them.
  7: (db) => {
    addColumn(db, 'import_jobs', 'updated', 'INTEGER NOT NULL DEFAULT 0');
    addColumn(db, 'import_jobs', 'on_existing', "TEXT NOT NULL DEFAULT 'skip' CHECK (on_existing IN ('skip', 'update'))");
  },
};

/** Adds a column to a table that exists without it; a table still to be created by schema.sql is left to it. */
function addColumn(db: Db, table: string, column: string, definition: string): void {
  const columns = db.pragma(`table_info(${table})`) as { name: string }[];
  if (columns.length > 0 && !columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
}

/** schema.sql, read when a database is first opened (threads that only open second connections never read it). */
let schemaSql: string | undefined;
const SCHEMA_URL = new URL('../../schema.sql', import.meta.url);

/** Returns an open database at `path` (its folder is created), upgraded to the current schema. */
export function openDatabase(path: string, { cacheMiB = 64 } = {}): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // Readers never block the writer and the writer never blocks readers; the CLI can write while the server runs.
  db.pragma('journal_mode = WAL');
  configure(db, cacheMiB * 1024);
  try {
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * Returns a second read-write connection to the database that `openDatabase` opened at `path` (not upgraded again),
 * for a thread that writes large batches: a page cache of `cacheMiB` MiB, so the customer indexes stay in memory
 * between its transactions.
 */
export function openWriterConnection(path: string, cacheMiB: number): Db {
  const db = new Database(path, { fileMustExist: true });
  configure(db, cacheMiB * 1024);
  return db;
}

/** Returns a read-only connection to the file of `db`, for reading one snapshot over many steps; throws when it is gone. */
export function openReadConnection(db: Db): Db {
  if (db.memory) throw new Error('An in-memory database has no second connection.');
  return new Database(db.name, { readonly: true, fileMustExist: true });
}

function configure(db: Db, cacheKiB: number): void {
  // With WAL, NORMAL loses no committed data on a process crash and fsyncs far less often.
  db.pragma('synchronous = NORMAL');
  // Declared REFERENCES are enforced (SQLite leaves them off by default).
  db.pragma('foreign_keys = ON');
  db.pragma(`cache_size = -${cacheKiB}`);
  // Another process holding the write lock (the user CLI, a backup) makes us wait, not fail.
  db.pragma('busy_timeout = 5000');
}

/**
 * Steps that fill a table schema.sql has just created from what a database of version N held, run after schema.sql
 * when a database of version N or older is upgraded.
 */
const BACKFILLS: Record<number, (db: Db) => void> = {
  // 5 -> 6: each existing campaign's copy becomes its version 1, as generated.
  5: (db) =>
    db.exec(
      `INSERT OR IGNORE INTO campaign_versions (campaign_id, version, title, message, call_to_action, source, model, created_by, created_at)
       SELECT id, 1, title, message, call_to_action, 'generated', model, created_by, created_at FROM campaigns`,
    ),
};

function migrate(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new Error(`The database has schema version ${version}; this release knows up to ${SCHEMA_VERSION}. Upgrade the service.`);
  }
  db.transaction(() => {
    for (let from = version; from > 0 && from < SCHEMA_VERSION; from++) UPGRADES[from]?.(db);
    db.exec((schemaSql ??= readFileSync(SCHEMA_URL, 'utf8')));
    for (let from = version; from > 0 && from < SCHEMA_VERSION; from++) BACKFILLS[from]?.(db);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/** Returns whether a better-sqlite3 error is a UNIQUE or PRIMARY KEY violation. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
