// The server side of server-sent events: headers once, `data:` frames, heartbeats, back-pressure, abort.
import type { Context } from './context.ts';
import { drained } from './drain.ts';

export interface EventStream {
  /** Sends one event whose `data` is the JSON of `event`; waits while the client is not reading. False once the client is gone. */
  send(event: unknown): Promise<boolean>;
  /** Ends the response; later sends do nothing. */
  close(): void;
}

/**
 * Answers the request with `text/event-stream`, flushing the headers at once, and returns the writer.
 * A `: keep-alive` comment goes out every `heartbeatMs` while nothing else does. Nothing is written after the
 * client's connection closes (`ctx.signal` fires then).
 */
export function openEventStream(ctx: Context, heartbeatMs: number): EventStream {
  const { res, signal } = ctx;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  let done = false;
  let lastWrite = Date.now();

  const gone = () => done || signal.aborted || res.destroyed || res.writableEnded;
  /** Writes a chunk; when the socket's buffer is full, waits for it to drain or for the client to leave. */
  const write = async (chunk: string): Promise<boolean> => {
    if (gone()) return false;
    lastWrite = Date.now();
    if (res.write(chunk)) return true;
    await drained(res, signal);
    return !gone();
  };

  let queue: Promise<boolean> = Promise.resolve(true);
  const enqueue = (chunk: string) => (queue = queue.then(() => write(chunk)));

  const heartbeat = setInterval(() => {
    if (Date.now() - lastWrite >= heartbeatMs / 2 && res.writableLength === 0) void enqueue(': keep-alive\n\n');
  }, heartbeatMs);
  heartbeat.unref();
  const stop = () => {
    done = true;
    clearInterval(heartbeat);
  };
  signal.addEventListener('abort', stop, { once: true });

  let closing = false;
  return {
    send: (event) => (closing ? Promise.resolve(false) : enqueue(`data: ${JSON.stringify(event)}\n\n`)),
    close() {
      if (closing) return;
      closing = true;
      void queue.then(() => {
        stop();
        if (!res.destroyed && !res.writableEnded) res.end();
      });
    },
  };
}
