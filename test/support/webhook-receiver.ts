// A webhook receiver on loopback for tests and the benchmark: records every request, answers per a script of
// statuses, redirects and delays (then with the fallback), and resolves a promise when the n-th request arrives.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * One answer: a status, or a status with a `Location`, a delay before answering, a body, and `close` to end the
 * connection after it (so the client keeps no idle connection to a receiver about to stop).
 */
export type ScriptedAnswer = number | { status: number; location?: string; delayMs?: number; body?: string; close?: boolean };

export interface ReceivedRequest {
  method: string;
  /** The path and query asked for. */
  path: string;
  /** Header names lower-case, as node:http gives them. */
  headers: Record<string, string>;
  body: string;
  /** Date.now() when the body had arrived. */
  receivedAt: number;
}

export interface WebhookReceiver {
  /** Where to deliver: the receiver's origin and `/hooks/<name>`. */
  url: string;
  requests: ReceivedRequest[];
  /** Answers for the next requests, in order; once used up, `fallback`. */
  script(answers: ScriptedAnswer[]): void;
  fallback: ScriptedAnswer;
  /** Resolves with the n-th request (1 for the first) once it has arrived. */
  nth(n: number): Promise<ReceivedRequest>;
  /** Resolves once `holds(requests)` is true, checked now and after each request. */
  until(holds: (requests: readonly ReceivedRequest[]) => boolean): Promise<void>;
  /** How many distinct `webhook-id`s have arrived. */
  distinctIds(): number;
  /** The most requests that were being answered at the same time. */
  maxConcurrent(): number;
  /** Stops listening and cuts open connections (requests still waiting for a delayed answer included). */
  close(): Promise<void>;
}

/** Starts a receiver on a free port of 127.0.0.1 (or `port`); `name` ends its URL's path. */
export async function startWebhookReceiver({ name = 'endpoint', fallback = 200 as ScriptedAnswer, port = 0 } = {}): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const waiters: { n: number; resolve: (request: ReceivedRequest) => void }[] = [];
  const conditions: { holds: (requests: readonly ReceivedRequest[]) => boolean; resolve: () => void }[] = [];
  const answers: ScriptedAnswer[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let open = 0;
  let mostOpen = 0;

  const respond = (res: ServerResponse, answer: ScriptedAnswer) => {
    const { status, location, body, close } = typeof answer === 'number' ? { status: answer } : answer;
    res.writeHead(status, { 'content-type': 'text/plain', ...(location ? { location } : {}), ...(close ? { connection: 'close' } : {}) });
    res.end(body ?? '');
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    open++;
    mostOpen = Math.max(mostOpen, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
      const request = { method: req.method ?? '', path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
      requests.push(request);
      for (const waiter of waiters.filter((w) => w.n === requests.length)) waiter.resolve(request);
      for (const condition of conditions.filter((c) => c.holds(requests))) {
        conditions.splice(conditions.indexOf(condition), 1);
        condition.resolve();
      }
      const answer = answers.shift() ?? receiver.fallback;
      const delayMs = typeof answer === 'number' ? 0 : (answer.delayMs ?? 0);
      if (delayMs === 0) return respond(res, answer);
      const timer = setTimeout(() => {
        timers.delete(timer);
        respond(res, answer);
      }, delayMs);
      timers.add(timer);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/${name}`,
    requests,
    fallback,
    script(next) {
      answers.push(...next);
    },
    nth(n) {
      const arrived = requests[n - 1];
      if (arrived) return Promise.resolve(arrived);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    until(holds) {
      if (holds(requests)) return Promise.resolve();
      return new Promise((resolve) => conditions.push({ holds, resolve }));
    },
    distinctIds: () => new Set(requests.map((r) => r.headers['webhook-id'])).size,
    maxConcurrent: () => mostOpen,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
  return receiver;
}
