// Builders shared by the campaign tests: customers and a saved segment to draft for, a generation request, a service
// pointed at the fake model provider, and the checks every campaign must pass.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Channel, Tone } from '../../src/domain/campaigns.ts';
import type { Condition } from '../../src/domain/segments.ts';
import { startService, type RequestOptions, type Reply, type StartOptions, type TestService } from '../helpers.ts';
import { startFakeProvider, type FakeProvider, type FakeReply } from './fake-provider.ts';

/** Exactly the fields of a campaign, sorted. */
export const CAMPAIGN_KEYS = [
  'callToAction',
  'channel',
  'createdAt',
  'createdBy',
  'id',
  'message',
  'model',
  'objective',
  'segmentId',
  'segmentName',
  'status',
  'title',
  'tone',
  'updatedAt',
];

/** The limits of product.md section 6, written out rather than imported, so a change in src/ cannot move them. */
export const LIMITS: Record<Channel, { title: number; message: number; callToAction: number }> = {
  sms: { title: 60, message: 320, callToAction: 40 },
  push: { title: 60, message: 140, callToAction: 40 },
  email: { title: 120, message: 1200, callToAction: 60 },
};
export const CHANNELS: Channel[] = ['sms', 'push', 'email'];
export const TONES: Tone[] = ['professional', 'friendly', 'urgent', 'promotional'];

/** A generous model-call budget, so tests that generate many campaigns never meet the rate limit. */
export const NO_RATE_LIMIT = { MODEL_CALLS_PER_MINUTE: '100000', ACCESS_TOKEN_TTL: '86400' };

export const OBJECTIVE = 'Win back customers who stopped buying with a 20% discount on their next order.';

let customerCounter = 0;

/** Up to this many customers are created one by one: an import starts the service's writer thread, which takes longer. */
const CREATED_ONE_BY_ONE = 10;

/** Creates `count` customers in `country` (active, recent) so a segment on that country has exactly that size. */
export async function createCustomers(service: TestService, token: string, country: string, count: number): Promise<void> {
  const customer = () => {
    customerCounter++;
    return {
      name: `Campaign Customer ${customerCounter}`,
      email: `campaign.customer${customerCounter}@shop.example.com`,
      country,
      totalTransactions: 3,
      totalAmountSpent: 120,
      lastActivityDate: '2026-11-01T00:00:00.000Z',
      status: 'active',
    };
  };
  if (count <= CREATED_ONE_BY_ONE) {
    for (let i = 0; i < count; i++) {
      const reply = await service.request('POST', '/v1/customers', { token, body: customer() });
      assert.equal(reply.status, 200, reply.text);
    }
    return;
  }
  // An import takes at most 1000 rows.
  for (let done = 0; done < count; done += 1000) {
    const customers = Array.from({ length: Math.min(1000, count - done) }, customer);
    const reply = await service.request('POST', '/v1/customers/import', { token, body: { customers } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.imported, customers.length, reply.text);
  }
}

/** Saves a segment and returns it (`id`, `name`, `conditions`, `matchCount`, ...). */
export async function createSegment(service: TestService, token: string, name: string, conditions: Condition[]) {
  const reply = await service.request('POST', '/v1/segments', { token, body: { name, conditions } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { id: string; name: string; matchCount: number; conditions: Condition[] };
}

/** Creates `size` customers in a country of their own and a segment on exactly them; returns the segment. */
export async function audienceOf(service: TestService, token: string, size: number, country = `Testland ${++customerCounter}`) {
  if (size > 0) await createCustomers(service, token, country, size);
  const segment = await createSegment(service, token, `Customers in ${country}`, [{ field: 'country', operator: 'eq', value: country }]);
  assert.equal(segment.matchCount, size);
  return segment;
}

export interface GenerateBody {
  segmentId: string;
  objective: string;
  channel: Channel;
  tone: Tone;
}

/** A valid generation request for the segment, with `overrides` applied. */
export function briefFor(segmentId: string, overrides: Partial<GenerateBody> = {}): GenerateBody {
  return { segmentId, objective: OBJECTIVE, channel: 'sms', tone: 'friendly', ...overrides };
}

/** POSTs /v1/campaigns/generate with the body (any value, for validation tests) and an optional Idempotency-Key. */
export function generate(service: TestService, token: string, body: unknown, key?: string, options: RequestOptions = {}): Promise<Reply> {
  const headers = { ...options.headers, ...(key === undefined ? {} : { 'idempotency-key': key }) };
  return service.request('POST', '/v1/campaigns/generate', { ...options, token, body, headers });
}

/** Generates a campaign, asserts 200 with a well-formed campaign within its channel's limits, and returns it. */
export async function generateOk(service: TestService, token: string, body: GenerateBody, key?: string) {
  const reply = await generate(service, token, body, key);
  assert.equal(reply.status, 200, reply.text);
  assertCampaign(reply.body);
  return reply.body as Campaign;
}

export interface Campaign extends GenerateBody {
  id: string;
  segmentName: string;
  title: string;
  message: string;
  callToAction: string;
  status: string;
  model: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** Asserts the exact field set, non-empty copy within the channel's limits, and canonical timestamps. */
export function assertCampaign(campaign: Campaign): void {
  assert.deepEqual(Object.keys(campaign).sort(), CAMPAIGN_KEYS, JSON.stringify(campaign));
  assertWithinLimits(campaign, campaign.channel);
  for (const at of [campaign.createdAt, campaign.updatedAt]) assert.equal(new Date(at).toISOString(), at);
}

/** Asserts every part is non-empty and within the channel's limits; for sms and push the message holds the call to action. */
export function assertWithinLimits(copy: { title: string; message: string; callToAction: string }, channel: Channel): void {
  const limits = LIMITS[channel];
  const show = JSON.stringify(copy);
  for (const part of ['title', 'message', 'callToAction'] as const) {
    assert.ok(copy[part].trim().length > 0, `${part} is empty: ${show}`);
    assert.ok(copy[part].length <= limits[part], `${channel} ${part} is ${copy[part].length} > ${limits[part]}: ${show}`);
  }
  if (channel !== 'email') assert.ok(copy.message.includes(copy.callToAction), `the ${channel} message lacks the call to action: ${show}`);
}

/** Returns how many campaigns the list reports in all. */
export async function campaignTotal(service: TestService, token: string): Promise<number> {
  const reply = await service.request('GET', '/v1/campaigns', { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.total as number;
}

/** A provider reply holding the copy as the JSON object asked for, in either wire format. */
export function copyReply(copy: Record<string, unknown>, delayMs?: number): FakeReply {
  return delayMs === undefined ? { json: copy } : { json: copy, delayMs };
}

/** Valid copy a model might send. */
export const GOOD_COPY = { title: 'We miss you', message: 'Come back for 20% off your next order.', callToAction: 'Shop now' };

export interface WithProvider {
  service: TestService;
  fake: FakeProvider;
  token: string;
  userId: string;
  segment: { id: string; name: string; matchCount: number };
  close(): Promise<void>;
}

/**
 * Starts a fake provider and a service pointed at it (backoff jitter 0, so retries do not wait unless the provider
 * demands it), with a marketer and a segment of 3 customers. An unscripted provider request gets a 500.
 */
export async function startWithProvider(provider: 'openai' | 'anthropic', env: Record<string, string> = {}, options: StartOptions = {}): Promise<WithProvider> {
  const fake = await startFakeProvider();
  fake.defaultReply = { status: 500, body: { error: { message: 'unscripted request' } } };
  const service = await startService({
    random: () => 0,
    ...options,
    env: {
      ...NO_RATE_LIMIT,
      LLM_PROVIDER: provider,
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'test-model',
      LLM_API_KEY: 'test-key',
      LLM_MAX_RETRIES: '2',
      LLM_TIMEOUT_MS: '5000',
      ...env,
    },
  });
  const user = await service.createUser('lifecycle_marketer');
  const token = (await service.signIn(user.email)).accessToken;
  const segment = await audienceOf(service, token, 3, `Fakeland ${provider}`);
  const close = async () => {
    await service.close();
    await fake.close();
  };
  return { service, fake, token, userId: user.id, segment, close };
}

/** `startWithProvider` for one test: both servers close when it ends. */
export async function withProvider(t: TestContext, provider: 'openai' | 'anthropic', env: Record<string, string> = {}, options: StartOptions = {}): Promise<WithProvider> {
  const setup = await startWithProvider(provider, env, options);
  t.after(setup.close);
  return setup;
}

/** The text of the prompt the provider received (system and every message), whatever the wire format. */
export function promptText(body: any): string {
  const system = typeof body.system === 'string' ? body.system : '';
  return [system, ...(body.messages as { content: string }[]).map((m) => m.content)].join('\n');
}

/** The conversation the provider received, without the system message. */
export function conversation(body: any): { role: string; content: string }[] {
  return (body.messages as { role: string; content: string }[]).filter((m) => m.role !== 'system');
}

/** Moves a campaign along the review path to `status` (`in_review` by `author`, every later move by `reviewer`); returns it. */
export async function moveCampaignTo(service: TestService, ids: { campaign: string; author: string; reviewer: string }, status: 'in_review' | 'approved' | 'sent'): Promise<Campaign> {
  const path = ['in_review', 'approved', 'sent'];
  let reply: Reply | undefined;
  for (const step of path.slice(0, path.indexOf(status) + 1)) {
    const token = step === 'in_review' ? ids.author : ids.reviewer;
    reply = await service.request('PATCH', `/v1/campaigns/${ids.campaign}/status`, { token, body: { status: step } });
    assert.equal(reply.status, 200, reply.text);
  }
  return reply!.body as Campaign;
}
