// Starting a worker thread on one of these modules: under tsx (TypeScript sources) the thread first registers tsx's
// loader, which the main thread's --import does not give it.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Returns a started worker thread running `entry`, a module next to this one, with `workerData`; unref'd. */
export function startWorkerThread(entry: URL, workerData: unknown, transferList: Transferable[] = []): Worker {
  // A small young generation: each thread is a heap of its own, and the default lets each grow by tens of MB of garbage.
  const options: WorkerOptions = { workerData, transferList: transferList as WorkerOptions['transferList'], resourceLimits: { maxYoungGenerationSizeMb: 4 } };
  const thread = import.meta.url.endsWith('.ts')
    ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`, {
        eval: true,
        ...options,
      })
    : new Worker(entry, options);
  thread.unref();
  return thread;
}
