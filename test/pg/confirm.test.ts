// A proposal of the assistant confirmed once across instances (product.md section 13, issue 35): two services in this
// process on one PostgreSQL database stand for two instances behind a proxy, sharing one fake model provider. A
// confirm on one while the other runs it waits and answers what the first stored; a reject meanwhile is 409; a
// failed run lets the waiting instance run it; a claim naming an instance that is gone holds nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertProblem, startService, type TestService } from '../helpers.ts';
import { audienceOf, campaignTotal, copyReply, GOOD_COPY, NO_RATE_LIMIT } from '../support/campaigns.ts';
import { call, confirmAction, openThread, rejectAction, segmentCount, storedAction, streamTurn, type ChatAction } from '../support/chat.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { createDatabase, dropDatabase } from '../support/postgres.ts';

const BOUNDED = { timeout: 20_000 };

let url: string;
let fake: FakeProvider;
let a: TestService;
let b: TestService;
let token: string;
let segment: { id: string; name: string };

before(async () => {
  url = await createDatabase('confirm', { withSchema: true });
  fake = await startFakeProvider();
  fake.defaultReply = { status: 500, body: { error: { message: 'unscripted request' } } };
  const env = {
    ...NO_RATE_LIMIT,
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    LLM_MODEL: 'test-model',
    LLM_API_KEY: 'test-key',
    LLM_MAX_RETRIES: '2',
    LLM_TIMEOUT_MS: '5000',
  };
  // Backoff jitter 0: retries after a 500 do not wait.
  a = await startService({ databaseUrl: url, env, random: () => 0 });
  b = await startService({ databaseUrl: url, env, random: () => 0 });
  const user = await a.createUser('lifecycle_marketer');
  token = (await a.signIn(user.email)).accessToken;
  segment = await audienceOf(a, token, 3, 'Confirmland');
});

after(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await fake?.close();
  if (url) await dropDatabase(url);
});

/** A proposal the fake provider makes on instance A, in a new thread: `tool` with `input`. */
async function propose(tool: 'save_segment' | 'draft_campaign', input: unknown): Promise<{ threadId: string; action: ChatAction }> {
  fake.enqueue({ toolCalls: [call(`call_${tool}`, tool, input)] }, { text: 'Confirm it.' });
  const thread = await openThread(a, token);
  const turn = await streamTurn(a, token, thread.id, 'Propose it');
  assert.equal(turn.last.type, 'done', JSON.stringify(turn.frames));
  assert.equal(turn.actions.length, 1);
  return { threadId: thread.id, action: turn.actions[0]! };
}

/** A draft_campaign proposal for the shared segment. */
const proposeDraft = () => propose('draft_campaign', { segmentId: segment.id, objective: 'Bring back lapsed buyers with a voucher', channel: 'sms', tone: 'urgent' });

/** The instance the proposal's confirm runs on, as stored. */
const runningOn = (actionId: string) => a.queryValue<string | null>('SELECT running_on FROM chat_actions WHERE id = ?', actionId);

test('a confirm on B while A writes the copy waits for A: one model call, one campaign, both 200 with the same answer', BOUNDED, async () => {
  const { threadId, action } = await proposeDraft();
  const campaigns = await campaignTotal(a, token);
  const requests = fake.requests.length;
  fake.enqueue(copyReply(GOOD_COPY, 500));
  const onA = confirmAction(a, token, threadId, action.id);
  await fake.waitForRequests(requests + 1); // A is writing the copy and holds the claim
  const onB = await confirmAction(b, token, threadId, action.id);
  const first = await onA;
  assert.equal(first.status, 200, first.text);
  assert.equal(onB.status, 200, onB.text);
  assert.deepEqual(onB.body, first.body);
  assert.deepEqual(first.body.action, { ...action, status: 'confirmed', resultId: first.body.result.id });
  assert.equal(fake.requests.length, requests + 1, 'one model call: B did not run it');
  assert.equal(await campaignTotal(b, token), campaigns + 1);
  assert.equal(await runningOn(action.id), null, 'the claim ends with the confirm');
});

test('confirms sent to A and B at the same moment make one segment and answer the same', BOUNDED, async () => {
  for (let i = 0; i < 3; i++) {
    const { threadId, action } = await propose('save_segment', { name: `Raced ${i}`, conditions: [{ field: 'country', operator: 'eq', value: 'Confirmland' }] });
    const before = await segmentCount(a, token);
    const [onA, onB] = await Promise.all([confirmAction(a, token, threadId, action.id), confirmAction(b, token, threadId, action.id)]);
    assert.equal(onA.status, 200, onA.text);
    assert.equal(onB.status, 200, onB.text);
    assert.deepEqual(onA.body, onB.body);
    assert.equal(await segmentCount(a, token), before + 1);
  }
});

test('a reject on B while A confirms is 409 conflict; A then answers confirmed', BOUNDED, async () => {
  const { threadId, action } = await proposeDraft();
  const requests = fake.requests.length;
  fake.enqueue(copyReply(GOOD_COPY, 300));
  const onA = confirmAction(a, token, threadId, action.id);
  await fake.waitForRequests(requests + 1);
  const holder = await runningOn(action.id);
  assert.equal(await a.queryValue('SELECT count(*) FROM service_instances WHERE id = ?', holder), 1, 'A holds the claim under its live lease');
  assertProblem(await rejectAction(b, token, threadId, action.id), 409, 'conflict');
  assert.equal(await runningOn(action.id), holder, 'the refused reject left the claim');
  const confirmed = await onA;
  assert.equal(confirmed.status, 200, confirmed.text);
  assert.deepEqual(await storedAction(b, token, threadId, action.id), { ...action, status: 'confirmed', resultId: confirmed.body.result.id });
});

test("a confirm on B waiting for A's run that fails runs it itself; the proposal ends confirmed once", BOUNDED, async () => {
  const { threadId, action } = await proposeDraft();
  const campaigns = await campaignTotal(a, token);
  const requests = fake.requests.length;
  // A's call and its two retries fail slowly; the next request, B's, gets the copy.
  const failing = { status: 500, delayMs: 300, body: { error: { message: 'overloaded' } } };
  fake.enqueue(failing, failing, failing, copyReply(GOOD_COPY));
  const onA = confirmAction(a, token, threadId, action.id);
  await fake.waitForRequests(requests + 1);
  const onB = confirmAction(b, token, threadId, action.id);
  assertProblem(await onA, 503, 'llm_unavailable');
  const confirmed = await onB;
  assert.equal(confirmed.status, 200, confirmed.text);
  assert.deepEqual(confirmed.body.action, { ...action, status: 'confirmed', resultId: confirmed.body.result.id });
  assert.equal(fake.requests.length, requests + 4);
  assert.equal(await campaignTotal(a, token), campaigns + 1);
});

test('a proposal whose running_on names an instance that is gone is confirmed, or rejected, normally', BOUNDED, async () => {
  const gone = 'f0000000-0000-4000-8000-00000000dead';
  const first = await propose('save_segment', { name: 'Orphaned claim', conditions: [{ field: 'country', operator: 'eq', value: 'Confirmland' }] });
  await a.query('UPDATE chat_actions SET running_on = ? WHERE id = ?', gone, first.action.id);
  const before = await segmentCount(a, token);
  const confirmed = await confirmAction(b, token, first.threadId, first.action.id);
  assert.equal(confirmed.status, 200, confirmed.text);
  assert.deepEqual(confirmed.body.action, { ...first.action, status: 'confirmed', resultId: confirmed.body.result.id });
  assert.equal(await segmentCount(a, token), before + 1);
  assert.equal(await runningOn(first.action.id), null);

  const second = await propose('save_segment', { name: 'Orphaned reject', conditions: [{ field: 'country', operator: 'eq', value: 'Confirmland' }] });
  await a.query('UPDATE chat_actions SET running_on = ? WHERE id = ?', gone, second.action.id);
  const rejected = await rejectAction(b, token, second.threadId, second.action.id);
  assert.equal(rejected.status, 200, rejected.text);
  assert.deepEqual(rejected.body, { action: { ...second.action, status: 'rejected' } });
});
