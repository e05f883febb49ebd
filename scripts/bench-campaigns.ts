// Campaign benchmark: local generation over HTTP, the latency the service adds on top of a model provider, and
// GET /v1/campaigns over 100,000 campaigns against a bare node:http floor. Run by `npm run bench`, or alone as
// `npm run bench:campaigns -- [--database PATH] [--duration S]` on a copy of a seeded database.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { openSqliteEngine } from '../src/db/engine.ts';
import { createSegmentRepository } from '../src/db/segments.ts';
import { startFakeProvider } from '../test/support/fake-provider.ts';
import { audienceReady, ensureUser, freshCopy, load, type Load, log, percentile, SERVICE, signIn as signInAt, startProcess, waitFor } from './bench-support.ts';

const ACCOUNT = { email: 'campaign-bench@example.com', fullName: 'Campaign bench', role: 'admin', password: 'bench-password-1' } as const;
const CAMPAIGNS = 100_000;
export interface CampaignBench {
  campaigns: number;
  floor: Load;
  list: Load & { ratioToFloor: number };
  localGeneration: Load;
  provider: ProviderAdded;
  /** POST /v1/segments/draft with the local parser; the count is the preview's, over the whole base. */
  segmentDraft: Load;
  /** POST /v1/segments/draft through a provider answering at once. */
  segmentDraftProvider: ProviderAdded;
}

interface ProviderAdded {
  serviceP50: number;
  serviceP99: number;
  providerP50: number;
  addedP50: number;
  requests: number;
}

/** What the segment draft bench describes: every field and a few phrases the parser must read. */
const DRAFT_BODY = { description: 'customers in Germany who spent more than $1,000 with at least three orders, active in the last 90 days' };

/** Adds a user, a segment and 100,000 campaigns (written directly, in one transaction) unless they are there. */
async function prepare(database: string): Promise<{ segmentId: string }> {
  const engine = openSqliteEngine(database);
  const { db } = engine;
  const user = await ensureUser(engine, ACCOUNT);
  const segment = await createSegmentRepository(engine).insertSegment(
    { name: 'Bench: Germany, 3+ purchases', conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }, { field: 'totalTransactions', operator: 'gte', value: 3 }], matchCount: 0, createdBy: user.id },
    new Date(),
  );
  const have = db.prepare('SELECT count(*) FROM campaigns').pluck().get() as number;
  const insert = db.prepare(
    `INSERT INTO campaigns (id, segment_id, segment_name, objective, channel, tone, title, message, call_to_action, status, model, created_by, created_at, updated_at)
     VALUES (?, ?, ?, 'Bring lapsed buyers back with a spring offer', ?, 'friendly', 'Spring is here', 'Hi there! Our spring offer is waiting for you. Take a look', 'Take a look', ?, 'local', ?, ?, ?)`,
  );
  const channels = ['sms', 'email', 'push'] as const;
  const statuses = ['draft', 'in_review', 'approved', 'sent'] as const;
  await engine.write(() => {
    const start = Date.now() - CAMPAIGNS * 1000;
    for (let i = have; i < CAMPAIGNS; i++) insert.run(randomUUID(), segment.id, segment.name, channels[i % 3], statuses[i % 4], user.id, start + i * 1000, start + i * 1000);
  });
  await engine.close();
  return { segmentId: segment.id };
}

/** Runs the campaign benchmark on `database` (changed: campaigns are added) and returns its figures. */
export async function benchCampaigns({ database, duration, port = 3927 }: { database: string; duration: number; port?: number }): Promise<CampaignBench> {
  const { segmentId } = await prepare(database);
  const fake = await startFakeProvider();
  fake.defaultReply = { json: { title: 'Spring is here', message: 'Our spring offer is waiting for you.', callToAction: 'Take a look' } };
  const common = { DATABASE_PATH: database, LOG_LEVEL: 'info', MODEL_CALLS_PER_MINUTE: '100000', ADMIN_PASSWORD: 'unused-admin-password' };
  const local = startProcess(SERVICE, { ...common, PORT: String(port), LLM_PROVIDER: 'local' }, 'data/bench-campaigns-local.log');
  await waitFor(`http://127.0.0.1:${port}/health`);
  const floor = startProcess(['--import', 'tsx', 'scripts/bench-floor.ts', database, String(port + 1), 'campaigns'], {}, 'data/bench-campaigns-floor.log');
  await waitFor(`http://127.0.0.1:${port + 1}/`);
  const api = (path: string, p = port) => `http://127.0.0.1:${p}${path}`;
  const signIn = (p: number) => signInAt(`http://127.0.0.1:${p}`, ACCOUNT.email, ACCOUNT.password);

  try {
    const token = await signIn(port);
    await audienceReady(api(''), token);
    const body = { segmentId, objective: 'Bring lapsed buyers back with a spring offer on boots', channel: 'sms', tone: 'friendly' };
    log(`Campaigns, 50 connections, ${duration} s each:`);
    const floorRow = await load('floor: bare node:http, campaigns page', api('/', port + 1), duration);
    const list = await load(`GET /v1/campaigns (${CAMPAIGNS.toLocaleString('en')} campaigns)`, api('/v1/campaigns'), duration, { token });
    const localGeneration = await load('POST /v1/campaigns/generate (local generator)', api('/v1/campaigns/generate'), duration, { token, method: 'POST', body });
    const segmentDraft = await load('POST /v1/segments/draft (local parser)', api('/v1/segments/draft'), duration, { token, method: 'POST', body: DRAFT_BODY });
    local.kill('SIGTERM');
    floor.kill('SIGTERM');

    // The same generation through an OpenAI-compatible provider that answers at once, one request at a time.
    const remote = startProcess(
      SERVICE,
      { ...common, PORT: String(port + 2), LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'bench-model', LLM_API_KEY: 'bench-key' },
      'data/bench-campaigns-remote.log',
    );
    await waitFor(api('/health', port + 2));
    const remoteToken = await signIn(port + 2);
    await audienceReady(api('', port + 2), remoteToken);
    const timed = async (run: () => Promise<unknown>, count: number) => {
      const samples: number[] = [];
      for (let i = 0; i < count; i++) {
        const begun = performance.now();
        await run();
        samples.push(performance.now() - begun);
      }
      return samples.sort((a, b) => a - b);
    };
    const requests = 300;
    /** The time the service adds to `path` over the provider alone, both timed one request at a time. */
    const addedOver = async (path: string, requestBody: unknown): Promise<ProviderAdded> => {
      const service = await timed(async () => {
        const reply = await fetch(api(path, port + 2), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${remoteToken}` }, body: JSON.stringify(requestBody) });
        if (reply.status !== 200) throw new Error(`${path} through the provider: ${reply.status} ${await reply.text()}`);
      }, requests);
      const providerRequest = JSON.stringify(fake.requests.at(-1)?.body ?? {});
      const provider = await timed(async () => {
        await (await fetch(`${fake.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: providerRequest })).text();
      }, requests);
      const figures = { serviceP50: percentile(service, 0.5), serviceP99: percentile(service, 0.99), providerP50: percentile(provider, 0.5), requests };
      return { ...figures, addedP50: figures.serviceP50 - figures.providerP50 };
    };
    const added = await addedOver('/v1/campaigns/generate', body);
    log(`  generation through a provider answering at once: service p50 ${added.serviceP50.toFixed(2)} ms, provider p50 ${added.providerP50.toFixed(2)} ms, added p50 ${added.addedP50.toFixed(2)} ms`);
    fake.defaultReply = { json: { conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }, { field: 'totalTransactions', operator: 'gte', value: 3 }], unmatched: [] } };
    const draftAdded = await addedOver('/v1/segments/draft', DRAFT_BODY);
    log(`  segment draft through a provider answering at once: service p50 ${draftAdded.serviceP50.toFixed(2)} ms, provider p50 ${draftAdded.providerP50.toFixed(2)} ms, added p50 ${draftAdded.addedP50.toFixed(2)} ms`);
    remote.kill('SIGTERM');
    return {
      campaigns: CAMPAIGNS,
      floor: floorRow,
      list: { ...list, ratioToFloor: list.requestsPerSecond / floorRow.requestsPerSecond },
      localGeneration,
      provider: added,
      segmentDraft,
      segmentDraftProvider: draftAdded,
    };
  } finally {
    local.kill('SIGTERM');
    floor.kill('SIGTERM');
    await fake.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { database: { type: 'string', default: 'data/bench-1000000.db' }, duration: { type: 'string', default: '5' } } });
  const copy = 'data/bench-campaigns.db';
  freshCopy(values.database, copy);
  const result = await benchCampaigns({ database: copy, duration: Number(values.duration) });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
