// Webhooks (product.md section 10) against a real receiver on loopback: endpoints managed by admins only, validation,
// Standard Webhooks signatures checked with the `standardwebhooks` package, the same webhook-id on every retry, the
// retry schedule (WEBHOOK_RETRY_SCHEDULE=200,200, moved by the test clock), failed after the last attempt, 410
// disables, redirects not followed, rotation with both signatures for 24 hours, the test send, subscriptions, the
// events of campaign moves and import jobs, and pending deliveries resumed after a restart. Waits are on the
// receiver's requests and the service's log lines, never on sleeps.
import assert from 'node:assert/strict';
import { mock, test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import * as v from 'valibot';
import type { CampaignStatus } from '../src/domain/campaigns.ts';
import { WEBHOOK_EVENTS } from '../src/schemas/webhooks.ts';
import { assertProblem, startService, TestClock, type TestService } from './helpers.ts';
import { audienceOf, briefFor, generateOk, NO_RATE_LIMIT } from './support/campaigns.ts';
import { keptDatabase } from './support/kept-database.ts';
import { startWebhookReceiver, type ReceivedRequest, type ScriptedAnswer, type WebhookReceiver } from './support/webhook-receiver.ts';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const WEBHOOK_KEYS = ['createdAt', 'enabled', 'events', 'id', 'updatedAt', 'url'];

interface Setup {
  service: TestService;
  admin: string;
  adminId: string;
  receiver: WebhookReceiver;
}

/** A service retrying after 200 ms twice, an admin, and a receiver; all closed after the test. */
async function setup(t: TestContext, env: Record<string, string> = {}, fallback: ScriptedAnswer = 200): Promise<Setup> {
  const service = await startService({ env: { ...NO_RATE_LIMIT, WEBHOOK_RETRY_SCHEDULE: '200,200', ...env } });
  const receiver = await startWebhookReceiver({ fallback });
  t.after(async () => {
    await receiver.close();
    await service.close();
  });
  const user = await service.createUser('admin');
  const admin = (await service.signIn(user.email)).accessToken;
  return { service, admin, adminId: user.id, receiver };
}

/** Creates an endpoint, asserts 200, and returns it with its secret. */
async function createEndpoint(service: TestService, token: string, url: string, events: string[] = ['campaign.status_changed', 'campaign.approved', 'customers.import_completed']) {
  const reply = await service.request('POST', '/v1/webhooks', { token, body: { url, events } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { id: string; url: string; events: string[]; secret: string; enabled: boolean };
}

/**
 * Verifies the request with `Webhook.verify` of the standardwebhooks package, as a receiver at the moment it was sent,
 * and checks the body against the documented schema of its type (no field missing, none undescribed); returns it.
 */
function verify(secret: string, request: ReceivedRequest): unknown {
  // The package checks webhook-timestamp against Date.now(); the service signs with the test clock.
  mock.timers.enable({ apis: ['Date'], now: Number(request.headers['webhook-timestamp']) * 1000 });
  let payload: { type: string };
  try {
    payload = new Webhook(secret).verify(request.body, request.headers) as { type: string };
  } finally {
    mock.timers.reset();
  }
  const documented = WEBHOOK_EVENTS.find((event) => event.type === payload.type);
  assert.ok(documented, `an undocumented event type: ${payload.type}`);
  const result = v.safeParse(documented.body, payload);
  assert.ok(result.success, `${payload.type} does not fit its schema: ${result.issues?.map((i) => `${v.getDotPath(i)}: ${i.message}`).join('; ')}`);
  return payload;
}

/** Resolves once the service has logged the outcome of attempt `attempt` of the event's delivery. */
function attemptLogged(service: TestService, eventId: string, attempt: number) {
  return service.waitForLog((line) => String(line.msg).startsWith('webhook delivery') && line.eventId === eventId && line.attempt === attempt);
}

async function deliveriesOf(service: TestService, token: string, webhookId: string, query = '') {
  const reply = await service.request('GET', `/v1/webhooks/${webhookId}/deliveries${query}`, { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as { items: Record<string, unknown>[]; total: number; page: number; limit: number };
}

function testSend(service: TestService, token: string, webhookId: string) {
  return service.request('POST', `/v1/webhooks/${webhookId}/test`, { token });
}

async function moveOk(service: TestService, token: string, id: string, status: CampaignStatus, note?: string) {
  const reply = await service.request('PATCH', `/v1/campaigns/${id}/status`, { token, body: note === undefined ? { status } : { status, note } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as Record<string, unknown> & { id: string; updatedAt: string };
}

const seconds = (clock: TestClock) => String(Math.floor(clock.now().getTime() / 1000));

test('an admin registers an endpoint: 200 with a whsec_ secret shown once; GET, list and PATCH never show it', async (t) => {
  const { service, admin, receiver } = await setup(t);
  const created = await service.request('POST', '/v1/webhooks', {
    token: admin,
    body: { url: receiver.url, events: ['campaign.approved'], description: '  CRM sync  ', secret: 'whsec_chosen', id: 'mine', enabled: false },
  });
  assert.equal(created.status, 200, created.text);
  assert.match(created.body.secret, SECRET);
  assert.equal(Buffer.from(created.body.secret.slice(6), 'base64').length, 32);
  assert.notEqual(created.body.id, 'mine', 'unknown properties are ignored');
  assert.deepEqual(
    { url: created.body.url, events: created.body.events, description: created.body.description, enabled: created.body.enabled },
    { url: receiver.url, events: ['campaign.approved'], description: 'CRM sync', enabled: true },
  );
  assert.equal(created.body.createdAt, service.clock.now().toISOString());

  const { secret, ...shown } = created.body;
  const got = await service.request('GET', `/v1/webhooks/${created.body.id}`, { token: admin });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, shown);
  const list = await service.request('GET', '/v1/webhooks', { token: admin });
  assert.deepEqual(list.body, [shown]);
  const patched = await service.request('PATCH', `/v1/webhooks/${created.body.id}`, { token: admin, body: { description: null, events: ['campaign.approved', 'customers.import_completed'] } });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(Object.keys(patched.body).sort(), WEBHOOK_KEYS);
  assert.deepEqual(patched.body.events, ['campaign.approved', 'customers.import_completed']);
  for (const reply of [got, list, patched]) assert.ok(!reply.text.includes(secret), 'the secret is never shown again');
});

test('the URL is stored as the URL parser writes it', async (t) => {
  const { service, admin } = await setup(t);
  const created = await createEndpoint(service, admin, ' HTTPS://Hooks.Example.COM ');
  assert.equal(created.url, 'https://hooks.example.com/');
});

test('validation: 400 naming the field for bad URLs, credentials, unknown, empty or repeated events, long descriptions', async (t) => {
  const { service, admin, receiver } = await setup(t);
  const post = (body: unknown) => service.request('POST', '/v1/webhooks', { token: admin, body });
  const events = ['campaign.approved'];
  assertProblem(await post({}), 400, 'validation_failed', ['url', 'events']);
  for (const url of ['ftp://hooks.example.com/x', 'javascript:alert(1)', 'file:///etc/passwd', 'hooks.example.com/x', 'not a url', '', 42]) {
    assertProblem(await post({ url, events }), 400, 'validation_failed', ['url']);
  }
  const credentials = await post({ url: 'https://user:pass@hooks.example.com/x', events });
  assertProblem(credentials, 400, 'validation_failed', ['url']);
  assert.match(credentials.body.errors[0].message, /user name or password/);
  assertProblem(await post({ url: 'https://token@hooks.example.com/x', events }), 400, 'validation_failed', ['url']);
  assertProblem(await post({ url: 'https://hooks.example.com/x#part', events }), 400, 'validation_failed', ['url']);
  assertProblem(await post({ url: `https://hooks.example.com/${'x'.repeat(2000)}`, events }), 400, 'validation_failed', ['url']);
  assertProblem(await post({ url: receiver.url, events: [] }), 400, 'validation_failed', ['events']);
  assertProblem(await post({ url: receiver.url, events: 'campaign.approved' }), 400, 'validation_failed', ['events']);
  const unknown = await post({ url: receiver.url, events: ['campaign.approved', 'campaign.deleted'] });
  assertProblem(unknown, 400, 'validation_failed', ['events.1']);
  assert.match(unknown.body.errors[0].message, /campaign\.status_changed, campaign\.approved, customers\.import_completed/);
  assertProblem(await post({ url: receiver.url, events: ['webhook.test'] }), 400, 'validation_failed', ['events.0']);
  assertProblem(await post({ url: receiver.url, events: ['campaign.approved', 'campaign.approved'] }), 400, 'validation_failed', ['events']);
  assertProblem(await post({ url: receiver.url, events, description: 'x'.repeat(501) }), 400, 'validation_failed', ['description']);
  assertProblem(await post({ url: receiver.url, events, description: '   ' }), 400, 'validation_failed', ['description']);
  assertProblem(await service.request('POST', '/v1/webhooks', { token: admin, raw: '{', headers: { 'content-type': 'application/json' } }), 400, 'validation_failed', ['body']);

  const { id } = await createEndpoint(service, admin, receiver.url, events);
  const patch = (body: unknown) => service.request('PATCH', `/v1/webhooks/${id}`, { token: admin, body });
  assertProblem(await patch({ enabled: 'yes' }), 400, 'validation_failed', ['enabled']);
  assertProblem(await patch({ url: 'gopher://hooks.example.com' }), 400, 'validation_failed', ['url']);
  assertProblem(await patch({ events: [] }), 400, 'validation_failed', ['events']);
  assertProblem(await service.request('GET', `/v1/webhooks/${id}/deliveries?limit=0`, { token: admin }), 400, 'validation_failed', ['limit']);
  assertProblem(await service.request('GET', `/v1/webhooks/${id}/deliveries?limit=201`, { token: admin }), 400, 'validation_failed', ['limit']);
  assertProblem(await service.request('GET', `/v1/webhooks/${id}/deliveries?page=0`, { token: admin }), 400, 'validation_failed', ['page']);
  assert.equal(await service.queryValue('SELECT count(*) FROM webhooks'), 1, 'nothing stored by the refused requests');
});

test('roles: lifecycle_marketer and marketing_lead get 403 on every webhook operation, before the id or body is looked at; no token is 401', async (t) => {
  const { service, admin, receiver } = await setup(t);
  const { id } = await createEndpoint(service, admin, receiver.url);
  const calls: [string, string, unknown?][] = [
    ['POST', '/v1/webhooks', { url: 'ftp://bad', events: [] }],
    ['GET', '/v1/webhooks'],
    ['GET', `/v1/webhooks/${id}`],
    ['GET', '/v1/webhooks/no-such-webhook'],
    ['PATCH', `/v1/webhooks/${id}`, { enabled: false }],
    ['DELETE', `/v1/webhooks/${id}`],
    ['POST', `/v1/webhooks/${id}/rotate-secret`],
    ['POST', `/v1/webhooks/${id}/test`],
    ['GET', `/v1/webhooks/${id}/deliveries?limit=0`],
  ];
  for (const role of ['lifecycle_marketer', 'marketing_lead'] as const) {
    const token = await service.tokenFor(role);
    for (const [method, path, body] of calls) assertProblem(await service.request(method, path, { token, body }), 403, 'forbidden');
  }
  for (const [method, path, body] of calls) assertProblem(await service.request(method, path, { body }), 401, 'unauthenticated');
  assert.equal(receiver.requests.length, 0, 'no test send went out');
  assert.equal((await service.request('GET', `/v1/webhooks/${id}`, { token: admin })).body.enabled, true);
});

test('unknown ids are 404 not_found on every operation with an id', async (t) => {
  const { service, admin } = await setup(t);
  for (const [method, path] of [
    ['GET', '/v1/webhooks/nope'],
    ['PATCH', '/v1/webhooks/nope'],
    ['DELETE', '/v1/webhooks/nope'],
    ['POST', '/v1/webhooks/nope/rotate-secret'],
    ['POST', '/v1/webhooks/nope/test'],
    ['GET', '/v1/webhooks/nope/deliveries'],
  ] as const) {
    assertProblem(await service.request(method, path, { token: admin, body: method === 'PATCH' ? { enabled: true } : undefined }), 404, 'not_found');
  }
});

test('the test send: a signed webhook.test POST to that endpoint alone, answered with the delivery after its first attempt', async (t) => {
  const { service, admin, adminId, receiver } = await setup(t);
  const other = await startWebhookReceiver({ name: 'other' });
  t.after(() => other.close());
  const endpoint = await createEndpoint(service, admin, receiver.url);
  await createEndpoint(service, admin, other.url);

  const reply = await testSend(service, admin, endpoint.id);
  assert.equal(reply.status, 200, reply.text);
  const request = receiver.requests[0]!;
  assert.equal(receiver.requests.length, 1);
  assert.equal(other.requests.length, 0, 'the other endpoint gets nothing');
  assert.equal(request.method, 'POST');
  assert.equal(request.path, '/hooks/endpoint');
  assert.equal(request.headers['content-type'], 'application/json');
  assert.match(request.headers['user-agent']!, /^campaign-drafting-service/);
  assert.equal(request.headers['webhook-timestamp'], seconds(service.clock));
  assert.match(request.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]{43}=$/);
  const payload = verify(endpoint.secret, request);
  assert.deepEqual(payload, {
    type: 'webhook.test',
    timestamp: service.clock.now().toISOString(),
    data: { webhookId: endpoint.id, by: { id: adminId, fullName: 'Test admin' } },
  });
  assert.throws(() => verify(endpoint.secret, { ...request, body: request.body.replace('webhook.test', 'webhook.tesT') }), /No matching signature/);

  assert.deepEqual(reply.body, {
    id: reply.body.id,
    eventId: request.headers['webhook-id'],
    type: 'webhook.test',
    attempt: 1,
    status: 'succeeded',
    responseStatus: 200,
    createdAt: service.clock.now().toISOString(),
  });
  const log = await deliveriesOf(service, admin, endpoint.id);
  assert.deepEqual(log, { items: [reply.body], total: 1, page: 1, limit: 50 });
});

test('retries: the same webhook-id after 200 ms and 200 ms more (WEBHOOK_RETRY_SCHEDULE=200,200), then failed after the third attempt', async (t) => {
  const { service, admin, receiver } = await setup(t, {}, 500);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const first = await testSend(service, admin, endpoint.id);
  const eventId = receiver.requests[0]!.headers['webhook-id']!;
  const sentAt = service.clock.now().getTime();
  assert.deepEqual(
    { attempt: first.body.attempt, status: first.body.status, responseStatus: first.body.responseStatus, nextAttemptAt: first.body.nextAttemptAt },
    { attempt: 1, status: 'pending', responseStatus: 500, nextAttemptAt: new Date(sentAt + 200).toISOString() },
  );
  assert.match(first.body.error, /^The endpoint answered 500/);

  service.clock.advance(200);
  const second = await receiver.nth(2);
  await attemptLogged(service, eventId, 2);
  assert.equal(second.headers['webhook-id'], eventId);
  assert.equal(second.body, receiver.requests[0]!.body, 'the same body');
  assert.equal(second.headers['webhook-timestamp'], seconds(service.clock), 'signed at the time of the attempt');
  verify(endpoint.secret, second);
  let [delivery] = (await deliveriesOf(service, admin, endpoint.id)).items;
  assert.deepEqual([delivery!.attempt, delivery!.status, delivery!.nextAttemptAt], [2, 'pending', new Date(sentAt + 400).toISOString()]);

  service.clock.advance(200);
  const third = await receiver.nth(3);
  await attemptLogged(service, eventId, 3);
  assert.equal(third.headers['webhook-id'], eventId);
  [delivery] = (await deliveriesOf(service, admin, endpoint.id)).items;
  assert.deepEqual(
    { attempt: delivery!.attempt, status: delivery!.status, responseStatus: delivery!.responseStatus, nextAttemptAt: delivery!.nextAttemptAt },
    { attempt: 3, status: 'failed', responseStatus: 500, nextAttemptAt: undefined },
  );
});

test('a retry that gets a 2xx ends the delivery succeeded', async (t) => {
  const { service, admin, receiver } = await setup(t);
  receiver.script([503]);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const first = await testSend(service, admin, endpoint.id);
  assert.equal(first.body.status, 'pending');
  service.clock.advance(200);
  await receiver.nth(2);
  await attemptLogged(service, first.body.eventId, 2);
  const [delivery] = (await deliveriesOf(service, admin, endpoint.id)).items;
  assert.deepEqual(
    { attempt: delivery!.attempt, status: delivery!.status, responseStatus: delivery!.responseStatus, error: delivery!.error, nextAttemptAt: delivery!.nextAttemptAt },
    { attempt: 2, status: 'succeeded', responseStatus: 200, error: undefined, nextAttemptAt: undefined },
  );
});

test('a 302 is not followed and counts as a failure', async (t) => {
  const { service, admin, receiver } = await setup(t);
  receiver.script([{ status: 302, location: '/hooks/moved' }]);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const reply = await testSend(service, admin, endpoint.id);
  assert.deepEqual(
    receiver.requests.map((r) => r.path),
    ['/hooks/endpoint'],
    'the redirect target was never asked',
  );
  assert.deepEqual([reply.body.status, reply.body.responseStatus, reply.body.attempt], ['pending', 302, 1]);
  assert.match(reply.body.error, /^Redirect not followed \(to \/hooks\/moved\)/);
});

test('no answer within WEBHOOK_TIMEOUT_MS, a refused connection and a long error body are failures with a short error', async (t) => {
  const { service, admin, receiver } = await setup(t, { WEBHOOK_TIMEOUT_MS: '200' });
  receiver.script([{ status: 200, delayMs: 5_000 }, { status: 500, body: `${'x'.repeat(1_000_000)}` }]);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const late = await testSend(service, admin, endpoint.id);
  assert.deepEqual([late.body.status, late.body.responseStatus, late.body.error], ['pending', undefined, 'No answer within 0.2 s.']);
  const long = await testSend(service, admin, endpoint.id);
  assert.equal(long.body.responseStatus, 500);
  assert.ok(long.body.error.length <= 230, `a short excerpt: ${long.body.error.length} characters`);

  const closed = await startWebhookReceiver({ name: 'closed' });
  await closed.close();
  const gone = await createEndpoint(service, admin, closed.url);
  const refused = await testSend(service, admin, gone.id);
  assert.deepEqual([refused.body.status, refused.body.responseStatus, refused.body.error], ['pending', undefined, 'Connection failed (ECONNREFUSED).']);
});

test('a 410 disables the endpoint: its pending deliveries end failed, new events are not sent, enabling resumes', async (t) => {
  const { service, admin, receiver } = await setup(t, NO_RATE_LIMIT);
  receiver.script([500, 410]);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const pending = await testSend(service, admin, endpoint.id);
  assert.equal(pending.body.status, 'pending');
  const gone = await testSend(service, admin, endpoint.id);
  assert.deepEqual([gone.body.status, gone.body.responseStatus, gone.body.nextAttemptAt], ['failed', 410, undefined]);

  const disabled = (await service.request('GET', `/v1/webhooks/${endpoint.id}`, { token: admin })).body;
  assert.equal(disabled.enabled, false);
  assert.match(disabled.disabledReason, /410 Gone/);
  const log = await deliveriesOf(service, admin, endpoint.id);
  assert.deepEqual(
    log.items.map((d) => [d.id, d.status, d.error]),
    [
      [gone.body.id, 'failed', 'The endpoint answered 410 Gone: it is disabled.'],
      [pending.body.id, 'failed', 'Not sent: the endpoint was disabled.'],
    ],
  );
  assertProblem(await testSend(service, admin, endpoint.id), 409, 'conflict');

  const segment = await audienceOf(service, admin, 1);
  const campaign = await generateOk(service, admin, briefFor(segment.id));
  await moveOk(service, admin, campaign.id, 'in_review');
  assert.equal((await deliveriesOf(service, admin, endpoint.id)).total, 2, 'a disabled endpoint gets no new deliveries');
  assert.equal(receiver.requests.length, 2);

  const enabled = await service.request('PATCH', `/v1/webhooks/${endpoint.id}`, { token: admin, body: { enabled: true } });
  assert.deepEqual([enabled.body.enabled, enabled.body.disabledReason], [true, undefined]);
  await moveOk(service, admin, campaign.id, 'draft');
  const resumed = JSON.parse((await receiver.nth(3)).body);
  assert.deepEqual([resumed.type, resumed.data.from, resumed.data.to], ['campaign.status_changed', 'in_review', 'draft']);
});

test('disabling an endpoint ends its pending deliveries as failed; deleting it removes its deliveries and their events', async (t) => {
  const { service, admin, receiver } = await setup(t, {}, 500);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const pending = await testSend(service, admin, endpoint.id);
  assert.equal(pending.body.status, 'pending');
  const disabled = await service.request('PATCH', `/v1/webhooks/${endpoint.id}`, { token: admin, body: { enabled: false } });
  assert.deepEqual([disabled.status, disabled.body.enabled, disabled.body.disabledReason], [200, false, undefined]);
  const [delivery] = (await deliveriesOf(service, admin, endpoint.id)).items;
  assert.deepEqual([delivery!.status, delivery!.nextAttemptAt, delivery!.error], ['failed', undefined, 'Not sent: the endpoint was disabled.']);

  const removed = await service.request('DELETE', `/v1/webhooks/${endpoint.id}`, { token: admin });
  assert.deepEqual([removed.status, removed.body], [200, null]);
  assertProblem(await service.request('GET', `/v1/webhooks/${endpoint.id}`, { token: admin }), 404, 'not_found');
  assertProblem(await service.request('GET', `/v1/webhooks/${endpoint.id}/deliveries`, { token: admin }), 404, 'not_found');
  assert.equal(await service.queryValue('SELECT count(*) FROM webhook_deliveries'), 0);
  assert.equal(await service.queryValue('SELECT count(*) FROM webhook_events'), 0);
});

test('rotation: both signatures for 24 hours, each verified with its own secret; after 24 hours only the new one', async (t) => {
  const { service, admin, receiver } = await setup(t);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const rotated = await service.request('POST', `/v1/webhooks/${endpoint.id}/rotate-secret`, { token: admin });
  assert.equal(rotated.status, 200, rotated.text);
  assert.match(rotated.body.secret, SECRET);
  assert.notEqual(rotated.body.secret, endpoint.secret);
  const until = new Date(service.clock.now().getTime() + 24 * 3_600_000).toISOString();
  assert.equal(rotated.body.previousSecretExpiresAt, until);
  assert.ok(!(await service.request('GET', `/v1/webhooks/${endpoint.id}`, { token: admin })).text.includes(rotated.body.secret));

  await testSend(service, admin, endpoint.id);
  const both = receiver.requests[0]!;
  const signatures = both.headers['webhook-signature']!.split(' ');
  assert.equal(signatures.length, 2);
  // Each secret verifies its own signature alone.
  verify(rotated.body.secret, { ...both, headers: { ...both.headers, 'webhook-signature': signatures[0]! } });
  verify(endpoint.secret, { ...both, headers: { ...both.headers, 'webhook-signature': signatures[1]! } });
  assert.throws(() => verify(endpoint.secret, { ...both, headers: { ...both.headers, 'webhook-signature': signatures[0]! } }), /No matching signature/);

  service.clock.advance(24 * 3_600_000 - 1_000);
  await testSend(service, admin, endpoint.id);
  assert.equal(receiver.requests[1]!.headers['webhook-signature']!.split(' ').length, 2, 'still both a second before the 24 hours end');

  service.clock.advance(1_000);
  const admin2 = await service.tokenFor('admin'); // the first token expired with the day
  await testSend(service, admin2, endpoint.id);
  const after = receiver.requests[2]!;
  assert.equal(after.headers['webhook-signature']!.split(' ').length, 1);
  verify(rotated.body.secret, after);
  assert.throws(() => verify(endpoint.secret, after), /No matching signature/);
});

test('campaign moves: status_changed on every move with from, to, by and note; approved with the frozen audience and the export URL', async (t) => {
  const { service, admin, adminId, receiver } = await setup(t, NO_RATE_LIMIT);
  const approvals = await startWebhookReceiver({ name: 'approvals' });
  t.after(() => approvals.close());
  const all = await createEndpoint(service, admin, receiver.url, ['campaign.status_changed']);
  const approvedOnly = await createEndpoint(service, admin, approvals.url, ['campaign.approved']);
  const segment = await audienceOf(service, admin, 2);
  const campaign = await generateOk(service, admin, briefFor(segment.id));

  const moves: [CampaignStatus, CampaignStatus, string | undefined][] = [
    ['draft', 'in_review', undefined],
    ['in_review', 'draft', 'Shorter, please'],
    ['draft', 'in_review', undefined],
    ['in_review', 'approved', 'Good to go'],
    ['approved', 'sent', undefined],
  ];
  const after: Awaited<ReturnType<typeof moveOk>>[] = [];
  for (const [, to, note] of moves) {
    service.clock.advance(60_000);
    after.push(await moveOk(service, admin, campaign.id, to, note));
  }
  const approvedAt = after[3]!.updatedAt;

  await receiver.nth(moves.length);
  // Deliveries run a few at once: match them by their content, not their order of arrival.
  const changes = receiver.requests.map((r) => verify(all.secret, r) as { type: string; timestamp: string; data: Record<string, unknown> });
  changes.sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  assert.deepEqual(
    changes,
    moves.map(([from, to, note], i) => ({
      type: 'campaign.status_changed',
      timestamp: after[i]!.updatedAt,
      data: { campaign: after[i], from, to, by: { id: adminId, fullName: 'Test admin' }, ...(note ? { note } : {}) },
    })),
  );

  const approvedRequest = await approvals.nth(1);
  assert.deepEqual(verify(approvedOnly.secret, approvedRequest), {
    type: 'campaign.approved',
    timestamp: approvedAt,
    data: {
      campaign: after[3],
      audience: { conditions: segment.conditions, description: (JSON.parse(approvedRequest.body) as any).data.audience.description, sizeAtApproval: 2, approvedAt },
      exportUrl: `${service.url}/v1/campaigns/${campaign.id}/audience.csv`,
    },
  });
  assert.match(JSON.parse(approvedRequest.body).data.audience.description, /\S/);
  const approvalsLog = await deliveriesOf(service, admin, approvedOnly.id);
  assert.deepEqual(
    approvalsLog.items.map((d) => d.type),
    ['campaign.approved'],
    'an endpoint subscribed to campaign.approved only gets no status_changed',
  );
  const changesLog = await deliveriesOf(service, admin, all.id, '?limit=2');
  assert.deepEqual([changesLog.total, changesLog.items.length, changesLog.page, changesLog.limit], [5, 2, 1, 2]);
  assert.equal(changesLog.items[0]!.createdAt, after[4]!.updatedAt, 'newest first');
});

test('PUBLIC_URL sets the origin and path prefix of the export URL', async (t) => {
  const { service, admin, receiver } = await setup(t, { ...NO_RATE_LIMIT, PUBLIC_URL: 'https://campaigns.example.com/api/' });
  await createEndpoint(service, admin, receiver.url, ['campaign.approved']);
  const segment = await audienceOf(service, admin, 1);
  const campaign = await generateOk(service, admin, briefFor(segment.id));
  await moveOk(service, admin, campaign.id, 'in_review');
  await moveOk(service, admin, campaign.id, 'approved');
  const approved = JSON.parse((await receiver.nth(1)).body);
  assert.equal(approved.data.exportUrl, `https://campaigns.example.com/api/v1/campaigns/${campaign.id}/audience.csv`);
});

test('a moved campaign writes its events in the same transaction: a refused move writes none', async (t) => {
  const { service, admin, receiver } = await setup(t, NO_RATE_LIMIT);
  const endpoint = await createEndpoint(service, admin, receiver.url);
  const segment = await audienceOf(service, admin, 1);
  const campaign = await generateOk(service, admin, briefFor(segment.id));
  assertProblem(await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: admin, body: { status: 'sent' } }), 409, 'conflict');
  const marketer = await service.tokenFor('lifecycle_marketer');
  await moveOk(service, marketer, campaign.id, 'in_review');
  assertProblem(await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: marketer, body: { status: 'approved' } }), 403, 'forbidden');
  await receiver.nth(1);
  assert.equal((await deliveriesOf(service, admin, endpoint.id)).total, 1);
});

test('an import job that ends writes customers.import_completed with the job as GET /v1/customers/imports/{id} shows it', async (t) => {
  const { service, admin, receiver } = await setup(t);
  const endpoint = await createEndpoint(service, admin, receiver.url, ['customers.import_completed']);
  const csv = 'email,name,country,total_transactions,total_amount_spent,last_activity_date,status\n' + 'ada@hooks.example.com,Ada,France,3,120,2026-11-01,active\n' + 'not-an-email,Bo,Spain,1,10,2026-11-01,active\n';
  const accepted = await service.request('POST', '/v1/customers/imports?fileName=hooks.csv', { token: admin, raw: csv, headers: { 'content-type': 'text/csv' } });
  assert.equal(accepted.status, 202, accepted.text);
  const request = await receiver.nth(1);
  const job = (await service.request('GET', `/v1/customers/imports/${accepted.body.id}`, { token: admin })).body;
  assert.deepEqual([job.status, job.imported, job.skipped], ['completed', 1, 1]);
  assert.deepEqual(verify(endpoint.secret, request), { type: 'customers.import_completed', timestamp: job.finishedAt, data: job });
});

test('deliveries run a few at once per endpoint, never more than 4', async (t) => {
  const { service, admin, receiver } = await setup(t, NO_RATE_LIMIT, { status: 200, delayMs: 300 });
  await createEndpoint(service, admin, receiver.url, ['campaign.status_changed']);
  const segment = await audienceOf(service, admin, 1);
  const campaign = await generateOk(service, admin, briefFor(segment.id));
  for (const to of ['in_review', 'draft', 'in_review', 'draft', 'in_review', 'draft', 'in_review', 'draft'] as const) await moveOk(service, admin, campaign.id, to);
  await receiver.nth(8);
  assert.ok(receiver.maxConcurrent() >= 2 && receiver.maxConcurrent() <= 4, `${receiver.maxConcurrent()} at once`);
  assert.equal(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size, 8);
});

test('a restart resumes pending deliveries from the tables, with the same webhook-id', async (t) => {
  const database = await keptDatabase('webhooks-restart');
  const clock = new TestClock();
  const env = { ...NO_RATE_LIMIT, WEBHOOK_RETRY_SCHEDULE: '60000' };
  // It closes each connection: the restarted service must not find a pooled connection to a receiver that is gone.
  const down = await startWebhookReceiver({ fallback: { status: 503, close: true } });
  const first = await startService({ ...database.at, clock, env });
  const admin = await first.tokenFor('admin');
  const endpoint = await createEndpoint(first, admin, down.url, ['campaign.status_changed']);
  const segment = await audienceOf(first, admin, 1);
  const campaign = await generateOk(first, admin, briefFor(segment.id));
  await moveOk(first, admin, campaign.id, 'in_review');
  const refused = await down.nth(1);
  await attemptLogged(first, refused.headers['webhook-id']!, 1);
  await first.close();
  const port = new URL(down.url).port;
  await down.close();

  const up = await startWebhookReceiver({ port: Number(port) });
  const second = await startService({ ...database.at, clock, env });
  t.after(async () => {
    await up.close();
    await second.close();
    await database.remove();
  });
  clock.advance(60_000);
  const delivered = await up.nth(1);
  assert.equal(delivered.headers['webhook-id'], refused.headers['webhook-id']);
  assert.equal(delivered.body, refused.body);
  verify(endpoint.secret, delivered);
  await attemptLogged(second, delivered.headers['webhook-id']!, 2);
  const [delivery] = (await deliveriesOf(second, await second.tokenFor('admin'), endpoint.id)).items;
  assert.deepEqual([delivery!.status, delivery!.attempt, delivery!.responseStatus], ['succeeded', 2, 200]);
});
