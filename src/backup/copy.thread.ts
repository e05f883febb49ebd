// One backup's copy and check, on a thread of its own so the event loop never waits for either: `VACUUM INTO` on a
// separate connection reads one snapshot (a single read transaction, so writers on every connection carry on and
// none of their commits lands half in the copy), then `PRAGMA integrity_check` reads the copy back. Posts the check's
// findings (`['ok']` when sound), or the message of what failed.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { openWriterConnection } from '../db/database.ts';

/** What the thread posts once. */
export type CopyOutcome = { findings: string[] } | { error: string };

const { source, partial } = workerData as { source: string; partial: string };

function copyAndCheck(): string[] {
  // Read-write only so that, as the last connection (the CLI on a stopped service), closing tidies the log away.
  const db = openWriterConnection(source, 8);
  try {
    db.prepare('VACUUM INTO ?').run(partial);
  } finally {
    db.close();
  }
  const copy = new Database(partial, { readonly: true, fileMustExist: true });
  try {
    return (copy.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check);
  } finally {
    copy.close();
  }
}

let outcome: CopyOutcome;
try {
  outcome = { findings: copyAndCheck() };
} catch (error) {
  // better-sqlite3's errors lose their message when cloned to another thread: send the text.
  outcome = { error: error instanceof Error ? `${error.message} (${(error as { code?: string }).code ?? error.name})` : String(error) };
}
parentPort!.postMessage(outcome);
