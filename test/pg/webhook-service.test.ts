// The webhook subsystem composed on PostgreSQL (openPgWebhooks: the outbox, the dispatcher and the repositories of
// src/db/postgres/), against the real server `npm run test:pg` starts, with a real receiver on loopback. Two engines on
// one database stand for two instances of the service, each with its own webhooks; which one leads the dispatcher is
// settled before they open (an instance's engine takes the lead first), so that each test knows who sends.
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { CampaignRepository, NewCampaign } from '../../src/db/campaigns.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { createPgCampaignRepository } from '../../src/db/postgres/campaigns.ts';
import { createPgUserRepository } from '../../src/db/postgres/users.ts';
import type { ImportJob } from '../../src/customers/index.ts';
import { AppError } from '../../src/domain/errors.ts';
import { openPgWebhooks, type PgWebhooks, type WebhookWithSecret } from '../../src/webhooks/index.ts';
import { freshInstances } from '../support/postgres.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { recordingLogger } from '../support/recording-logger.ts';

/** The loop the dispatcher leads (src/webhooks/dispatcher.ts). */
const LEAD = 'webhook-dispatcher';

let engines: PostgresEngine[] = [];
let userId: string;

before(async () => {
  engines = await freshInstances('webhook_service');
  const user = { email: 'lead@example.com', fullName: 'Lena Lead', role: 'marketing_lead' as const, passwordHash: 'scrypt$hash' };
  userId = (await createPgUserRepository(engines[0]!).insertUser(user, new Date())).id;
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

interface Instance {
  webhooks: PgWebhooks;
  log: ReturnType<typeof recordingLogger>;
}

/**
 * Opens the webhooks of both instances, the first (engines[0]) leading the dispatcher, and a receiver; all stopped
 * after the test (stop waits for the attempts under way: a duplicate in flight is counted before the test ends).
 */
async function openInstances(t: TestContext): Promise<{ leader: Instance; follower: Instance; receiver: WebhookReceiver }> {
  assert.equal(await engines[0]!.leadership.tryLead(LEAD), true, 'no dispatcher of an earlier test still leads');
  const receiver = await startWebhookReceiver();
  const open = (engine: PostgresEngine): Instance => {
    const log = recordingLogger();
    const options = { clock: () => new Date(), fetch: globalThis.fetch, logger: log.logger, retryScheduleMs: [60_000], timeoutMs: 10_000, publicUrl: () => 'https://crm.example' };
    return { webhooks: openPgWebhooks(engine, options), log };
  };
  const leader = open(engines[0]!);
  const follower = open(engines[1]!);
  t.after(async () => {
    leader.webhooks.abort();
    await Promise.all([leader.webhooks.stop(), follower.webhooks.stop()]);
    await receiver.close();
  });
  return { leader, follower, receiver };
}

/** Verifies the request's Standard Webhooks signature with the endpoint's secret (the standardwebhooks package); returns the payload. */
function verified(endpoint: WebhookWithSecret, request: ReceivedRequest): { type: string; timestamp: string; data: Record<string, unknown> } {
  return new Webhook(endpoint.secret).verify(request.body, request.headers) as { type: string; timestamp: string; data: Record<string, unknown> };
}

/** Resolves once the instance has logged the outcome of the delivery's attempt `attempt` (its record committed). */
const recorded = (instance: Instance, attempt = 1) => instance.log.waitFor((line) => String(line.msg).startsWith('webhook delivery') && line.attempt === attempt);

const draft = (n: number): NewCampaign => ({
  segmentId: '00000000-0000-4000-8000-000000000000',
  segmentName: 'Spain',
  objective: 'Win back lapsed buyers',
  channel: 'email',
  tone: 'friendly',
  title: `Title ${n}`,
  message: `Message ${n}`,
  callToAction: `Act ${n}`,
  model: 'model-1',
  createdBy: userId,
});

/** An import job as it ended, the payload of a `customers.import_completed` event. */
function finishedJob(id: string): ImportJob {
  const at = new Date().toISOString();
  return { id, status: 'completed', bytesRead: 10, rowsRead: 1, imported: 1, updated: 0, skipped: 0, onExisting: 'skip', ignoredColumns: [], startedAt: at, finishedAt: at, createdBy: userId };
}

const count = async (table: 'webhook_events' | 'webhook_deliveries') => {
  const sql = engines[0]!.sql;
  return (await sql<{ n: number }[]>`SELECT count(*) AS n FROM ${sql(table)}`)[0]!.n;
};

/** Resolves to the endpoint's deliveries, newest first, as [status, attempt, responseStatus]. */
async function deliveryStates(webhooks: PgWebhooks, endpoint: WebhookWithSecret) {
  const seq = await webhooks.endpoints.seqOf(endpoint.id);
  const { items } = await webhooks.deliveries.listDeliveries(seq, 1, 50);
  return items.map((d) => [d.status, d.attempt, d.responseStatus]);
}

test('a campaign move writes its event in the move transaction: one signed delivery, received once, by the leader', async (t) => {
  const { leader, follower, receiver } = await openInstances(t);
  const endpoint = await leader.webhooks.createWebhook({ url: receiver.url, events: ['campaign.status_changed', 'campaign.approved'], description: undefined }, new Date());
  // The move runs on the follower's engine with the follower's outbox: the leader is told and sends.
  const campaigns: CampaignRepository = createPgCampaignRepository(engines[1]!, { onMove: follower.webhooks.outbox.campaignMoved });
  const campaign = await campaigns.insertCampaign(draft(1), new Date());

  await campaigns.moveCampaign(campaign.id, { from: 'draft', to: 'in_review', note: 'please look', userId }, new Date());
  const payload = verified(endpoint, await receiver.nth(1));
  assert.equal(payload.type, 'campaign.status_changed');
  assert.deepEqual(
    { id: (payload.data.campaign as { id: string }).id, from: payload.data.from, to: payload.data.to, by: payload.data.by, note: payload.data.note },
    { id: campaign.id, from: 'draft', to: 'in_review', by: { id: userId, fullName: 'Lena Lead' }, note: 'please look' },
  );
  await recorded(leader);

  // Approval writes both events in one transaction, the approval's with the absolute export URL.
  const audience = { conditions: [], description: 'Everyone', size: 3 };
  await campaigns.moveCampaign(campaign.id, { from: 'in_review', to: 'approved', note: null, userId, audience }, new Date());
  await receiver.until((requests) => requests.length >= 3);
  const types = receiver.requests.slice(1).map((r) => verified(endpoint, r));
  assert.deepEqual(types.map((p) => p.type).sort(), ['campaign.approved', 'campaign.status_changed']);
  const approved = types.find((p) => p.type === 'campaign.approved')!;
  assert.equal(approved.data.exportUrl, `https://crm.example/v1/campaigns/${campaign.id}/audience.csv`);
  await leader.log.waitFor(() => leader.log.lines.filter((l) => l.msg === 'webhook delivery').length === 3);

  await Promise.all([leader.webhooks.stop(), follower.webhooks.stop()]); // waits for any attempt still under way
  assert.equal(receiver.requests.length, 3, 'each event once');
  assert.equal(receiver.distinctIds(), 3);
  assert.equal(follower.log.lines.filter((l) => String(l.msg).startsWith('webhook delivery')).length, 0, 'only the leader sends');
  assert.deepEqual(await deliveryStates(leader.webhooks, endpoint), [
    ['succeeded', 1, 200],
    ['succeeded', 1, 200],
    ['succeeded', 1, 200],
  ]);
});

test('a move that fails after the outbox wrote leaves no event, no delivery and the campaign unmoved', async (t) => {
  const { leader, receiver } = await openInstances(t);
  await leader.webhooks.createWebhook({ url: receiver.url, events: ['campaign.status_changed'], description: undefined }, new Date());
  const [eventsBefore, deliveriesBefore] = [await count('webhook_events'), await count('webhook_deliveries')];
  let seenInside = -1;
  const campaigns = createPgCampaignRepository(engines[0]!, {
    async onMove(move) {
      await leader.webhooks.outbox.campaignMoved(move);
      // Inside the move's transaction the outbox's rows are there: the rollback is what removes them.
      seenInside = await engines[0]!.write(async (tx) => (await tx<{ n: number }[]>`SELECT count(*) AS n FROM webhook_events`)[0]!.n);
      throw new Error('the move fails after the outbox wrote');
    },
  });
  const campaign = await campaigns.insertCampaign(draft(2), new Date());

  await assert.rejects(campaigns.moveCampaign(campaign.id, { from: 'draft', to: 'in_review', note: null, userId }, new Date()), /after the outbox wrote/);
  assert.equal(seenInside, eventsBefore + 1, 'the outbox wrote its event in the move transaction');
  assert.equal(await count('webhook_events'), eventsBefore);
  assert.equal(await count('webhook_deliveries'), deliveriesBefore);
  assert.equal((await campaigns.getCampaign(campaign.id)).status, 'draft');

  // A move that commits afterwards is the first (and only) request the receiver gets.
  const plain = createPgCampaignRepository(engines[0]!, { onMove: leader.webhooks.outbox.campaignMoved });
  await plain.moveCampaign(campaign.id, { from: 'draft', to: 'in_review', note: 'second try', userId }, new Date());
  assert.equal(JSON.parse((await receiver.nth(1)).body).data.note, 'second try');
  await recorded(leader);
  assert.equal(receiver.requests.length, 1);
});

test('two instances writing events at once: each event delivered once', async (t) => {
  const { leader, follower, receiver } = await openInstances(t);
  const endpoint = await follower.webhooks.createWebhook({ url: receiver.url, events: ['customers.import_completed'], description: undefined }, new Date());
  const ids = Array.from({ length: 10 }, (_, i) => `job-${i}`);
  // Each instance's outbox in a transaction of its own engine, all started before any is awaited.
  await Promise.all(ids.map((id, i) => (i % 2 ? follower : leader).webhooks.outbox.importFinished(finishedJob(id))));
  await receiver.until((requests) => requests.length >= ids.length);
  await leader.log.waitFor(() => leader.log.lines.filter((l) => l.msg === 'webhook delivery').length === ids.length);

  await Promise.all([leader.webhooks.stop(), follower.webhooks.stop()]);
  assert.equal(receiver.requests.length, ids.length, 'no event twice');
  assert.deepEqual(receiver.requests.map((r) => (verified(endpoint, r).data as { id: string }).id).sort(), [...ids].sort());
  assert.equal(receiver.distinctIds(), ids.length);
  assert.deepEqual(await deliveryStates(follower.webhooks, endpoint), ids.map(() => ['succeeded', 1, 200]));
});

test('sendTest on an instance that does not lead: answered after its attempt; not_found and conflict as on SQLite', async (t) => {
  const { follower, receiver } = await openInstances(t);
  const endpoint = await follower.webhooks.createWebhook({ url: receiver.url, events: ['campaign.approved'], description: 'test sends' }, new Date());

  const delivery = await follower.webhooks.sendTest(endpoint.id, userId, new Date());
  assert.deepEqual([delivery.status, delivery.attempt, delivery.responseStatus], ['succeeded', 1, 200]);
  const payload = verified(endpoint, await receiver.nth(1));
  assert.equal(payload.type, 'webhook.test');
  assert.deepEqual(payload.data, { webhookId: endpoint.id, by: { id: userId, fullName: 'Lena Lead' } });

  await assert.rejects(follower.webhooks.sendTest('00000000-0000-4000-8000-000000000000', userId, new Date()), (error: unknown) => {
    return error instanceof AppError && error.code === 'not_found';
  });
  await follower.webhooks.endpoints.updateWebhook(endpoint.id, { enabled: false }, new Date());
  await assert.rejects(follower.webhooks.sendTest(endpoint.id, userId, new Date()), (error: unknown) => {
    return error instanceof AppError && error.code === 'conflict' && error.message === 'The webhook is disabled: enable it before sending a test event.';
  });
  assert.equal(receiver.requests.length, 1);
});

test('stop gives up the claims of attempts cut short: the other instance takes over and delivers at once', { timeout: 30_000 }, async (t) => {
  const { leader, follower, receiver } = await openInstances(t);
  const endpoint = await leader.webhooks.createWebhook({ url: receiver.url, events: ['customers.import_completed'], description: undefined }, new Date());
  receiver.script([{ status: 200, delayMs: 60_000 }]); // the leader's attempt hangs until it is cut short

  await follower.webhooks.outbox.importFinished(finishedJob('job-held'));
  const first = await receiver.nth(1);
  // Aborted, the attempt is not recorded: the delivery stays pending, claimed by the leader's session until stop().
  leader.webhooks.abort();
  await leader.webhooks.stop();

  // The engine of the stopped instance stays open: only the released claim lets the follower attempt the delivery.
  const second = await receiver.nth(2);
  assert.equal(second.headers['webhook-id'], first.headers['webhook-id'], 'the same delivery, sent again');
  assert.equal((verified(endpoint, second).data as { id: string }).id, 'job-held');
  assert.equal(await engines[1]!.leadership.tryLead(LEAD), true, 'the follower took the lead the stopped instance resigned');
  await recorded(follower);
  assert.deepEqual(await deliveryStates(follower.webhooks, endpoint), [['succeeded', 1, 200]]);
  // The leadership the follower took is resigned when it stops (after the test), for the next test's leader.
});
