// Building the search index of a bulk load on a second thread: the thread indexes each batch's text into a scratch
// database while this one loads rows and sorts indexes, then copies the finished index into the database.
import { rmSync } from 'node:fs';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import type { CustomerRecord } from '../../domain/customers.ts';
import type { Db } from '../../db/database.ts';
import { startWorkerThread } from '../../db/worker-thread.ts';
import { searchText } from '../store/rows.ts';

/** Longest wait for the thread to finish after the last batch. */
const FINISH_TIMEOUT_MS = 10 * 60_000;

/** States of the shared flag the thread sets when it is done. */
export const BUILDING = 0;
export const COPIED = 1;
export const FAILED = 2;

/**
 * Starts a build of the (empty) search index of `db`'s customers. `add` hands it a batch of committed rows whose ids
 * start at `firstId`; `finish` waits, blocking, until the index is in the database, or throws the thread's error.
 * The database must stay otherwise unwritten from `finish` until it returns.
 */
export function startSearchIndexBuild(db: Db) {
  const scratch = `${db.name}.search-build`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(scratch + suffix, { force: true });
  const state = new Int32Array(new SharedArrayBuffer(4));
  const errors = new MessageChannel();
  const thread = startWorkerThread(new URL('./search-index.thread.ts', import.meta.url), {
    path: db.name,
    scratch,
    state: state.buffer,
    errors: errors.port2,
  }, [errors.port2]);

  return {
    add(firstId: number, rows: readonly CustomerRecord[]): void {
      thread.postMessage({ firstId, texts: rows.map((r) => searchText(r.name, r.email)) });
    },

    finish(): void {
      thread.postMessage('finish');
      const deadline = Date.now() + FINISH_TIMEOUT_MS;
      while (Atomics.load(state, 0) === BUILDING && Date.now() < deadline) Atomics.wait(state, 0, BUILDING, 1000);
      const outcome = Atomics.load(state, 0);
      errors.port1.close();
      if (outcome === COPIED) return;
      void thread.terminate();
      const reported = receiveMessageOnPort(errors.port1)?.message as string | undefined;
      throw new Error(`Building the search index failed: ${reported ?? 'the thread did not finish in time'}`);
    },
  };
}
