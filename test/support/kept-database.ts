// A database that outlives the services started on it, on whichever engine the suite runs: for tests that restart the
// service (or run a command beside it) on the same data.
import { join } from 'node:path';
import { openSqliteEngine } from '../../src/db/engine.ts';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import type { ServiceEngine } from '../../src/storage.ts';
import { ON_POSTGRES } from '../helpers.ts';
import { createDatabase, dropDatabase } from './postgres.ts';
import { tempDir } from './temp-dir.ts';

export interface KeptDatabase {
  /** What opens it, to spread into `startService`'s options: a SQLite file's path or a PostgreSQL database's URL. */
  at: { databasePath: string } | { databaseUrl: string };
  /** The configuration variable that names it, for a process started beside the service (the user CLI). */
  env: { DATABASE_PATH: string } | { DATABASE_URL: string };
  /** Removes it (a no-op for a SQLite file: its folder goes after the test file). */
  remove(): Promise<void>;
}

/**
 * Makes a database that no service owns: on PostgreSQL one with the service's schema, on SQLite the path of a file in a
 * temporary folder (the first service or command that opens it creates it).
 */
export async function keptDatabase(prefix: string): Promise<KeptDatabase> {
  if (ON_POSTGRES) {
    const url = await createDatabase(prefix.replaceAll('-', '_'), { withSchema: true });
    return { at: { databaseUrl: url }, env: { DATABASE_URL: url }, remove: () => dropDatabase(url) };
  }
  const path = join(tempDir(`campaigns-${prefix}-`), `${prefix}.db`);
  return { at: { databasePath: path }, env: { DATABASE_PATH: path }, remove: async () => {} };
}

/** An engine on a new database of the suite's engine, for tests that call repositories themselves; `close` removes it. */
export async function freshEngine(prefix: string): Promise<{ engine: ServiceEngine; close(): Promise<void> }> {
  const database = await keptDatabase(prefix);
  const engine: ServiceEngine = 'databaseUrl' in database.at ? new PostgresEngine(database.at.databaseUrl) : openSqliteEngine(database.at.databasePath);
  return {
    engine,
    async close() {
      await engine.close();
      await database.remove();
    },
  };
}
