// One backup of the live database: copied and checked on a worker thread under a temporary name, flushed to disk,
// then given its final name. A final name only ever holds a whole, checked copy, whenever the process dies.
import { existsSync } from 'node:fs';
import { link, open, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { startWorkerThread } from '../db/worker-thread.ts';
import type { CopyOutcome } from './copy.thread.ts';

/** What one backup wrote. */
export interface Backup {
  file: string;
  bytes: number;
  ms: number;
}

/** Thrown when a backup is given up because its signal fired (the service is stopping); nothing is left behind. */
export class BackupAbandoned extends Error {
  constructor(file: string) {
    super(`The backup to ${file} was abandoned.`);
    this.name = 'BackupAbandoned';
  }
}

/** Returns the temporary name `file` is written under: beside it, hidden, ending in `.partial` (plus `-journal` while written). */
function partialNameOf(file: string): string {
  return join(dirname(file), `.${basename(file)}.partial`);
}

/**
 * Copies the database at `databasePath` into `file` consistently while others write, and returns what was written.
 * Throws when `file` exists (never replaces it), the database cannot be read, the copy fails `integrity_check`, or
 * `BackupAbandoned` when `signal` fires first; the partial file is removed in every case.
 */
export async function backupDatabase(databasePath: string, file: string, signal?: AbortSignal): Promise<Backup> {
  const started = performance.now();
  if (existsSync(file)) throw new Error(`${file} already exists; a backup never replaces a file`);
  const partial = partialNameOf(file);
  // A leftover of a crash under this very name: VACUUM INTO writes only into a new or empty file.
  await removePartial(partial);
  try {
    const findings = await copyOnThread(databasePath, partial, file, signal);
    if (findings.length !== 1 || findings[0] !== 'ok') {
      throw new Error(`the copy failed integrity_check: ${findings.slice(0, 5).join('; ')}`);
    }
    await flush(partial); // VACUUM INTO does not sync its output; the name must not arrive before the bytes
    try {
      await link(partial, file); // unlike rename, fails rather than replace a file that appeared meanwhile
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${file} already exists; a backup never replaces a file`);
      throw error;
    }
    await removePartial(partial);
    await flush(dirname(file));
  } finally {
    await removePartial(partial);
  }
  const { size } = await stat(file);
  return { file, bytes: size, ms: Math.round(performance.now() - started) };
}

/** Resolves with the copy's integrity_check findings once the thread has ended; rejects with its error. */
function copyOnThread(source: string, partial: string, file: string, signal: AbortSignal | undefined): Promise<string[]> {
  if (signal?.aborted) return Promise.reject(new BackupAbandoned(file));
  return new Promise((resolve, reject) => {
    const thread = startWorkerThread(new URL('./copy.thread.ts', import.meta.url), { source, partial });
    thread.ref(); // a command-line backup has nothing else keeping the process alive
    let outcome: CopyOutcome | undefined;
    let failure: unknown;
    // Stops the thread at its next JavaScript step; a statement under way (the copy, the check) finishes first.
    const abandon = () => void thread.terminate();
    signal?.addEventListener('abort', abandon, { once: true });
    thread.once('message', (message: CopyOutcome) => (outcome = message));
    thread.once('error', (error) => (failure = error));
    thread.once('exit', () => {
      signal?.removeEventListener('abort', abandon);
      if (signal?.aborted) reject(new BackupAbandoned(file));
      else if (failure !== undefined) reject(failure instanceof Error ? failure : new Error(String(failure)));
      else if (outcome && 'findings' in outcome) resolve(outcome.findings);
      else reject(new Error(outcome?.error ?? 'the backup thread ended without checking the copy'));
    });
  });
}

/** Removes a partial file and the rollback journal SQLite keeps beside it while VACUUM INTO writes. */
async function removePartial(partial: string): Promise<void> {
  await rm(partial, { force: true });
  await rm(`${partial}-journal`, { force: true });
}

/** Writes what the system holds of a file (or a folder's entries) to the disk. */
async function flush(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
