// kill -9 and webhooks: events written while the receiver is down, and events whose deliveries are under way, are
// all delivered after a restart, at least once each (counted by distinct webhook-id), with nothing lost: every event
// the file holds arrives, and so does every move the service acknowledged.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../support/temp-dir.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { call, launchService, signInAdmin, type ChildService } from './child-service.ts';
import { openReadOnly } from './store-invariants.ts';

const dir = tempDir('campaigns-webhook-crash-');
/** Retries a second apart for long enough that no delivery gives up while the test runs. */
const ENV = { WEBHOOK_RETRY_SCHEDULE: Array(20).fill('1000').join(','), MODEL_CALLS_PER_MINUTE: '1000' };
const diag = (text: string) => process.stderr.write(`# ${text}\n`);

/** Registers the endpoint and drafts a campaign to move back and forth; returns the campaign's id. */
async function prepare(service: ChildService, token: string, url: string): Promise<string> {
  const endpoint = await call(service.url, 'POST', '/v1/webhooks', { token, body: { url, events: ['campaign.status_changed'] } });
  assert.equal(endpoint.status, 200, JSON.stringify(endpoint.body));
  const customer = { name: 'Hook Customer', email: 'hook.customer@crash.example.com', country: 'Hookland', totalTransactions: 2, totalAmountSpent: 50, lastActivityDate: '2026-11-01', status: 'active' };
  assert.equal((await call(service.url, 'POST', '/v1/customers', { token, body: customer })).status, 200);
  const segment = await call(service.url, 'POST', '/v1/segments', { token, body: { name: 'Hookland', conditions: [{ field: 'country', operator: 'eq', value: 'Hookland' }] } });
  assert.equal(segment.status, 200);
  const campaign = await call(service.url, 'POST', '/v1/campaigns/generate', {
    token,
    body: { segmentId: segment.body.id, objective: 'Tell Hookland about the spring offer before it ends.', channel: 'email', tone: 'friendly' },
  });
  assert.equal(campaign.status, 200, JSON.stringify(campaign.body));
  return campaign.body.id;
}

/**
 * Moves the campaign between draft and in_review (one status_changed event each) until `moves` were acknowledged,
 * then sends one more and kills the service while it is under way; returns how many moves were acknowledged.
 */
async function movesThenKill(service: ChildService, token: string, campaignId: string, moves: number, killWhen = () => true): Promise<number> {
  let acknowledged = 0;
  let killed: Promise<unknown> | undefined;
  for (let i = 0; ; i++) {
    const status = i % 2 === 0 ? 'in_review' : 'draft';
    const move = call(service.url, 'PATCH', `/v1/campaigns/${campaignId}/status`, { token, body: { status } });
    if (acknowledged >= moves && killWhen()) killed = service.kill();
    try {
      const reply = await move;
      if (reply.status === 200) acknowledged++;
    } catch {
      // the connection died with the process
    }
    if (killed) break;
  }
  await killed;
  return acknowledged;
}

/** Returns the ids of the events stored in the file. */
function storedEvents(path: string): string[] {
  const db = openReadOnly(path);
  try {
    return db.prepare('SELECT id FROM webhook_events ORDER BY seq').pluck().all() as string[];
  } finally {
    db.close();
  }
}

/** Resolves once every id has arrived at the receiver; rejects listing the missing ones after `timeoutMs`. */
async function allArrive(receiver: WebhookReceiver, ids: readonly string[], timeoutMs: number): Promise<void> {
  const missing = () => {
    const seen = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    return ids.filter((id) => !seen.has(id));
  };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${missing().length} of ${ids.length} events never arrived: ${missing().slice(0, 5).join(', ')}`)), timeoutMs);
  });
  try {
    await Promise.race([receiver.until(() => missing().length === 0), late]);
  } finally {
    clearTimeout(timer);
  }
}

test('kill -9 with events waiting for a receiver that is down: after a restart with it up, every event arrives', { timeout: 120_000 }, async () => {
  const database = join(dir, 'down.db');
  // A port nothing listens on until the receiver comes up on it after the restart.
  const probe = await startWebhookReceiver();
  const url = probe.url;
  await probe.close();

  let service = await launchService({ ...ENV, DATABASE_PATH: database });
  const token = await signInAdmin(service.url);
  const campaignId = await prepare(service, token, url);
  const acknowledged = await movesThenKill(service, token, campaignId, 150);

  const ids = storedEvents(database);
  diag(`${acknowledged} moves acknowledged, ${ids.length} events stored before the kill`);
  assert.ok(ids.length >= acknowledged, 'every acknowledged move wrote its event');
  assert.ok(ids.length <= acknowledged + 1, 'and only the move under way at the kill may have more');

  const receiver = await startWebhookReceiver({ port: Number(new URL(url).port) });
  service = await launchService({ ...ENV, DATABASE_PATH: database });
  try {
    await allArrive(receiver, ids, 60_000);
    assert.equal(receiver.distinctIds(), ids.length, 'no event that was not stored');
    for (const request of receiver.requests) assert.equal(JSON.parse(request.body).type, 'campaign.status_changed');
  } finally {
    await service.stop();
    await receiver.close();
  }
});

test('kill -9 while deliveries are under way: after the restart every event arrives at least once', { timeout: 120_000 }, async () => {
  const database = join(dir, 'busy.db');
  // Slow answers, so many deliveries are waiting or under way when the process dies.
  const receiver = await startWebhookReceiver({ fallback: { status: 200, delayMs: 50 } });
  let service = await launchService({ ...ENV, DATABASE_PATH: database });
  try {
    const token = await signInAdmin(service.url);
    const campaignId = await prepare(service, token, receiver.url);
    const acknowledged = await movesThenKill(service, token, campaignId, 100, () => receiver.requests.length >= 10);
    const ids = storedEvents(database);
    const before = receiver.distinctIds();
    diag(`${acknowledged} moves acknowledged, ${ids.length} events stored, ${before} delivered before the kill`);
    assert.ok(before < ids.length, 'the kill came while deliveries were still to be made');

    service = await launchService({ ...ENV, DATABASE_PATH: database });
    await allArrive(receiver, ids, 60_000);
    assert.equal(receiver.distinctIds(), ids.length);
    diag(`${receiver.requests.length - ids.length} duplicates (deliveries under way at the kill, sent again)`);
  } finally {
    await service.stop();
    await receiver.close();
  }
});
