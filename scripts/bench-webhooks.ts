// Webhook benchmark: 1,000 campaign moves (one `campaign.status_changed` event each) from a few concurrent clients,
// delivered to a receiver on loopback that answers at once. Measures deliveries per second, from the first change to
// the last arrival, and the time from each change (the event's `timestamp`, written in the move's transaction) to
// its arrival. Run by `npm run bench`, or alone as `npm run bench:webhooks -- [--events N] [--clients N]`.
import { parseArgs } from 'node:util';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';
import { audienceReady, log, percentile, removeDatabase, SERVICE, signIn, startProcess, waitFor } from './bench-support.ts';

const EMAIL = 'webhook-bench@example.com';
const PASSWORD = 'bench-password-1';

export interface WebhookLoad {
  events: number;
  clients: number;
  /** Events delivered a second, from the first change to the last arrival. */
  deliveriesPerSecond: number;
  /** Moves a second the clients made (each acknowledged before the next). */
  changesPerSecond: number;
  /** From the change to its arrival at the receiver, ms. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /** Arrivals beyond one per event (at least once: none expected without failures). */
  duplicates: number;
}

/**
 * Starts the service on a fresh `database` with one endpoint, makes `events` moves from `clients` clients at once,
 * waits until each event has arrived, and returns the figures. Throws when a move fails or an event never arrives.
 */
export async function webhookLoad({ database = 'data/bench-webhooks.db', events = 1000, clients = 10, port = 3937 } = {}): Promise<WebhookLoad> {
  removeDatabase(database);
  const env = { DATABASE_PATH: database, PORT: String(port), LOG_LEVEL: 'info', MODEL_CALLS_PER_MINUTE: '100000', ADMIN_EMAIL: EMAIL, ADMIN_PASSWORD: PASSWORD };
  const service = startProcess(SERVICE, env, 'data/bench-webhooks-service.log'); // request logs as in production
  const receiver = await startWebhookReceiver({ name: 'bench' });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${base}/health`);
    const token = await signIn(base, EMAIL, PASSWORD);
    const post = async (method: string, path: string, body: unknown) => {
      const reply = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const text = await reply.text();
      if (reply.status !== 200) throw new Error(`${method} ${path}: ${reply.status} ${text}`);
      return JSON.parse(text) as { id: string };
    };
    await post('POST', '/v1/webhooks', { url: receiver.url, events: ['campaign.status_changed'], description: 'bench' });
    await post('POST', '/v1/customers', { name: 'Bench Hook', email: 'bench.hook@example.com', country: 'Benchland', totalTransactions: 1, totalAmountSpent: 10, lastActivityDate: '2026-11-01', status: 'active' });
    await audienceReady(base, token);
    const segment = await post('POST', '/v1/segments', { name: 'Benchland', conditions: [{ field: 'country', operator: 'eq', value: 'Benchland' }] });
    const brief = { segmentId: segment.id, objective: 'Tell Benchland about the spring offer before it ends.', channel: 'email', tone: 'friendly' };
    const campaigns = await Promise.all(Array.from({ length: clients }, () => post('POST', '/v1/campaigns/generate', brief)));

    log(`Webhooks: ${events} campaign moves from ${clients} clients, delivered to a receiver on loopback:`);
    const began = Date.now();
    let next = 0;
    await Promise.all(
      campaigns.map(async ({ id }) => {
        for (let moves = 0; next < events; moves++) {
          next++;
          await post('PATCH', `/v1/campaigns/${id}/status`, { status: moves % 2 === 0 ? 'in_review' : 'draft' });
        }
      }),
    );
    const changesPerSecond = events / ((Date.now() - began) / 1000);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      receiver.until(() => receiver.distinctIds() >= events),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${receiver.distinctIds()} of ${events} events arrived within 60 s`)), 60_000))),
    ]);
    clearTimeout(timer);

    const firstArrival = new Map<string, number>();
    let firstChange = Infinity;
    for (const request of receiver.requests) {
      const id = request.headers['webhook-id']!;
      if (!firstArrival.has(id)) firstArrival.set(id, request.receivedAt - Date.parse((JSON.parse(request.body) as { timestamp: string }).timestamp));
      firstChange = Math.min(firstChange, Date.parse((JSON.parse(request.body) as { timestamp: string }).timestamp));
    }
    const lastArrival = Math.max(...receiver.requests.map((r) => r.receivedAt));
    const latencies = [...firstArrival.values()];
    const result: WebhookLoad = {
      events,
      clients,
      deliveriesPerSecond: events / ((lastArrival - firstChange) / 1000),
      changesPerSecond,
      latencyP50Ms: percentile(latencies, 0.5),
      latencyP99Ms: percentile(latencies, 0.99),
      latencyMaxMs: Math.max(...latencies),
      duplicates: receiver.requests.length - firstArrival.size,
    };
    log(
      `  ${Math.round(result.deliveriesPerSecond)} deliveries/s (changes made at ${Math.round(changesPerSecond)}/s); ` +
        `change to delivery p50 ${result.latencyP50Ms} ms, p99 ${result.latencyP99Ms} ms, max ${result.latencyMaxMs} ms`,
    );
    return result;
  } finally {
    service.kill('SIGTERM');
    await receiver.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { events: { type: 'string', default: '1000' }, clients: { type: 'string', default: '10' } } });
  const result = await webhookLoad({ events: Number(values.events), clients: Number(values.clients) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
