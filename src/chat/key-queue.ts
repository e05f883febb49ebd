// Steps on one thing (a proposal) that must not interleave. With an asynchronous repository, a read and what is
// decided from it are no longer one synchronous step: another request's write may land between them. Queued per key,
// they are one step again, and steps on other keys do not wait.

/** Runs `work` once every earlier step queued under the same key has ended; resolves or rejects as `work` does. */
export type KeyQueue = <T>(key: string, work: () => Promise<T>) => Promise<T>;

/** Returns an empty queue per key; a key is forgotten once its last step has ended. */
export function keyQueue(): KeyQueue {
  const tails = new Map<string, Promise<unknown>>();
  return async (key, work) => {
    const step = (tails.get(key) ?? Promise.resolve()).then(work);
    const tail = step.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    try {
      return await step;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}
