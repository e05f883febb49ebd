// `npm run backup -- --out FILE [--database PATH]`: a consistent copy of the database, also while the service writes.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { backupDatabase } from '../src/backup/index.ts';

const USAGE = `Usage: npm run backup -- --out FILE [--database PATH]
Copies the database (DATABASE_PATH, default ./data/campaigns.db) into FILE, which must not exist yet, while the
service may keep running. The copy is written under a temporary name beside FILE, checked with integrity_check,
and only then named FILE. Keep <DATABASE_PATH>.secret as well (unless TOKEN_SECRET is set).`;

/** Exits with `code` after printing `message` on stderr. */
function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

let values: { out?: string; database?: string; help?: boolean };
try {
  ({ values } = parseArgs({ options: { out: { type: 'string' }, database: { type: 'string' }, help: { type: 'boolean' } } }));
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`, 2);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (process.env.DATABASE_URL?.trim()) {
  fail(
    'DATABASE_URL is set: a PostgreSQL database is backed up with its own tools (pg_dump, base backups, your provider\'s snapshots), not with npm run backup. See the README, "Backups on PostgreSQL".',
    1,
  );
}
if (!values.out?.trim()) fail(`--out FILE is required: where to write the backup.\n${USAGE}`, 2);

const database = values.database ?? process.env.DATABASE_PATH?.trim() ?? './data/campaigns.db';
const out = resolve(values.out);
if (existsSync(out)) fail(`${values.out} already exists; choose a new file name (a backup never replaces a file).`, 1);
if (database === ':memory:' || !existsSync(database)) fail(`There is no database at ${database}; set DATABASE_PATH or pass --database PATH.`, 1);

try {
  mkdirSync(dirname(out), { recursive: true });
  const backup = await backupDatabase(database, out);
  process.stdout.write(
    `Backed up ${database} to ${values.out}: ${backup.bytes.toLocaleString('en')} bytes in ${backup.ms.toLocaleString('en')} ms, integrity_check ok.\n`,
  );
} catch (error) {
  fail(`The backup failed: ${(error as Error).message}`, 1);
}
