// Back-pressure for responses written in pieces (server-sent events, CSV downloads).
import type { ServerResponse } from 'node:http';

/** Resolves once the response's buffer has drained, or at once when `signal` aborts (the client left). */
export function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const finish = () => {
      res.off('drain', finish);
      signal.removeEventListener('abort', finish);
      resolve();
    };
    res.on('drain', finish);
    signal.addEventListener('abort', finish);
  });
}
