// The chat repository on PostgreSQL (src/db/postgres/chat.ts), against the real server `npm run test:pg` starts
// (TEST_DATABASE_URL), in a database of its own. Its behaviour is the SQLite repository's: the same calls run on both
// and answer the same, ids aside. Then the races PostgreSQL's concurrency exposes, run for real: two engines on one
// database stand for two instances, and the racing calls are all started before any is awaited.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createChatRepository, type ChatRepository, type NewMessage } from '../../src/db/chat.ts';
import { openSqliteEngine, type SqliteEngine } from '../../src/db/engine.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { createPgChatRepository } from '../../src/db/postgres/chat.ts';
import { createPgUserRepository } from '../../src/db/postgres/users.ts';
import { createUserRepository } from '../../src/db/users.ts';
import { AppError } from '../../src/domain/errors.ts';
import { tempDir } from '../support/temp-dir.ts';
import { freshInstances } from '../support/postgres.ts';

const now = new Date('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(now.getTime() + ms);

let engines: PostgresEngine[] = [];
let chats: ChatRepository[];
let sqlite: SqliteEngine;

before(async () => {
  engines = await freshInstances('chat');
  chats = engines.map((engine) => createPgChatRepository(engine, randomUUID()));
  sqlite = openSqliteEngine(join(tempDir(), 'chat.db'));
});
after(async () => {
  await Promise.all([...engines.map((e) => e.close()), sqlite.close()]);
});

const sql = () => engines[0]!.sql;

/** A new user on PostgreSQL (threads belong to users); resolves to its id. */
async function pgUser(): Promise<string> {
  return (await createPgUserRepository(engines[0]!).insertUser({ email: `${randomUUID()}@example.com`, fullName: 'Chatter', role: 'admin', passwordHash: 'h' }, now)).id;
}

/** Calls `call` `n` times at once, alternating between the two instances, and waits for every outcome. */
function race<T>(n: number, call: (repo: ChatRepository, i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => call(chats[i % 2]!, i)));
}

const isNotFound = (error: unknown) => error instanceof AppError && error.code === 'not_found';

const assistant = (content: string, actions: { id: string; summary: string }[] = []): Extract<NewMessage, { role: 'assistant' }> => ({
  role: 'assistant',
  content,
  model: 'test-model',
  actions: actions.map((a) => ({ ...a, kind: 'save_segment' as const, input: { name: a.summary, conditions: [{ field: 'country', op: 'eq', value: 'FR' }] } })),
});

/**
 * Runs the same sequence of calls on `repo` for two users and resolves to every answer (or error code and message)
 * in order. `actionIds` are the proposals' ids: the caller's, as the assistant's turn names them.
 */
async function scenario(repo: ChatRepository, a: string, b: string, actionIds: string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  const note = async (call: () => Promise<unknown>) => {
    try {
      out.push(await call());
    } catch (error) {
      assert.ok(error instanceof AppError, `only AppErrors: ${String(error)}`);
      out.push({ error: error.code, message: error.message });
    }
  };
  const [act1, act2, act3] = actionIds as [string, string, string];
  const first = await repo.createThread(a, undefined, at(0));
  const second = await repo.createThread(a, 'Explicit title', at(1));
  const others = await repo.createThread(b, undefined, at(2));
  out.push(first, second, others);
  const long = `\n   Which customers in   France\tbought twice ${'and then some more words '.repeat(4)}\nsecond line`;
  await note(() => repo.addMessages(a, first.id, [{ role: 'user', content: long }], at(3)));
  await note(() => repo.addMessages(a, first.id, [{ role: 'user', content: 'A second question' }], at(4)));
  await note(() => repo.addMessages(a, first.id, [{ ...assistant('Here are two proposals', [{ id: act1, summary: 'French' }, { id: act2, summary: 'Twice' }]), truncated: true }], at(5)));
  await note(() => repo.addMessages(a, second.id, [{ role: 'user', content: 'Keep my title' }, assistant('Fine', [{ id: act3, summary: 'Third' }])], at(6)));
  await note(() => repo.addMessages(a, others.id, [assistant('No user message: no new title')], at(7)));
  await note(() => repo.addMessages(b, first.id, [{ role: 'user', content: 'not mine' }], at(8)));
  for (const [user, id] of [[a, first.id], [b, first.id], [a, randomUUID()], [b, others.id]] as const) await note(() => repo.getThread(user, id));
  for (const [page, limit] of [[1, 1], [2, 1], [3, 1], [1, 10], [2, 10]] as const) await note(() => repo.listThreads(a, page, limit));
  await note(() => repo.listThreads(b, 1, 10));
  await note(() => repo.listThreads(randomUUID(), 1, 10));
  await note(() => repo.listMessages(a, first.id));
  await note(() => repo.listMessages(b, first.id));
  await note(() => repo.listMessages(a, others.id));
  for (const count of [1, 2, 10]) await note(() => repo.lastMessages(first.id, count));
  await note(() => repo.lastMessages(randomUUID(), 5));
  await note(() => repo.getAction(a, first.id, act1));
  await note(() => repo.getAction(a, second.id, act1));
  await note(() => repo.getAction(b, first.id, act1));
  await note(() => repo.getAction(a, first.id, randomUUID()));
  await note(() => repo.settleAction(a, first.id, act1, { status: 'confirmed', result: { id: 'segment-1', name: 'French', size: 3 }, resultId: 'segment-1' }, at(9)));
  await note(() => repo.settleAction(a, first.id, act1, { status: 'rejected' }, at(10)));
  await note(() => repo.settleAction(a, first.id, act1, { status: 'confirmed', result: { id: 'segment-2' }, resultId: 'segment-2' }, at(11)));
  await note(() => repo.settleAction(a, first.id, act2, { status: 'rejected' }, at(12)));
  await note(() => repo.settleAction(a, first.id, act2, { status: 'confirmed', result: { id: 'segment-3' }, resultId: 'segment-3' }, at(13)));
  await note(() => repo.settleAction(b, first.id, act3, { status: 'rejected' }, at(14)));
  await note(() => repo.settleAction(a, first.id, act3, { status: 'rejected' }, at(14)));
  await note(() => repo.getAction(a, first.id, act1));
  await note(() => repo.listMessages(a, first.id));
  await note(() => repo.lastMessages(second.id, 10));
  await note(() => repo.deleteThread(b, first.id));
  await note(() => repo.deleteThread(a, first.id));
  await note(() => repo.deleteThread(a, first.id));
  await note(() => repo.getThread(a, first.id));
  await note(() => repo.listMessages(a, first.id));
  await note(() => repo.lastMessages(first.id, 10));
  await note(() => repo.getAction(a, first.id, act1));
  await note(() => repo.addMessages(a, first.id, [{ role: 'user', content: 'too late' }], at(15)));
  await note(() => repo.listThreads(a, 1, 10));
  return out;
}

/** The answers with every uuid replaced by its order of first appearance: the two engines' ids differ, nothing else. */
function withoutIds(answers: unknown[]): unknown {
  const seen = new Map<string, string>();
  const text = JSON.stringify(answers).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => {
    if (!seen.has(id)) seen.set(id, `id#${seen.size}`);
    return seen.get(id)!;
  });
  return JSON.parse(text);
}

test('every function answers on PostgreSQL as on SQLite, ids aside', async () => {
  const sqliteUsers = createUserRepository(sqlite);
  const newSqliteUser = async () => (await sqliteUsers.insertUser({ email: `${randomUUID()}@example.com`, fullName: 'Chatter', role: 'admin', passwordHash: 'h' }, now)).id;
  const expected = await scenario(createChatRepository(sqlite), await newSqliteUser(), await newSqliteUser(), [randomUUID(), randomUUID(), randomUUID()]);
  const answers = await scenario(chats[0]!, await pgUser(), await pgUser(), [randomUUID(), randomUUID(), randomUUID()]);
  assert.deepEqual(withoutIds(answers), withoutIds(expected));

  // Spot checks, in case both engines were wrong alike.
  const [first, second] = answers as [{ title: string }, { title: string }];
  assert.equal(first.title, 'New conversation');
  assert.equal(second.title, 'Explicit title');
  const listed = answers[16] as { items: { title: string; messageCount: number }[]; total: number }; // listThreads(a, 1, 10)
  assert.equal(listed.total, 2);
  assert.deepEqual(listed.items.map((t) => t.messageCount), [2, 3], 'most recently updated first, each counting its messages');
  assert.equal(listed.items[0]!.title, 'Explicit title', 'an explicit title is kept');
  const auto = listed.items[1]!.title;
  assert.ok(auto.startsWith('Which customers in France bought twice and then') && auto.endsWith('…') && Array.from(auto).length === 60, auto);
});

test('threads page most recently updated first, ties by id, with their total', async () => {
  const user = await pgUser();
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await chats[0]!.createThread(user, `T${i}`, at(i % 2 === 0 ? 100 : 200)));
  const expected = [...made].sort((x, y) => y.updatedAt.localeCompare(x.updatedAt) || (x.id < y.id ? 1 : -1)).map((t) => t.id);
  const pages = [await chats[1]!.listThreads(user, 1, 2), await chats[0]!.listThreads(user, 2, 2), await chats[1]!.listThreads(user, 3, 2), await chats[0]!.listThreads(user, 4, 2)];
  assert.deepEqual(pages.map((p) => p.total), [5, 5, 5, 5]);
  assert.deepEqual(pages.flatMap((p) => p.items.map((t) => t.id)), expected);
  assert.deepEqual(pages[3]!.items, []);
});

test('two dozen settles of one proposal at once: exactly one settles it, every other answers what it stored', async () => {
  const user = await pgUser();
  const thread = await chats[0]!.createThread(user, undefined, now);
  const actionId = randomUUID();
  await chats[0]!.addMessages(user, thread.id, [{ role: 'user', content: 'q' }, assistant('a', [{ id: actionId, summary: 'Proposal' }])], now);
  // Every caller settles differently (its own result id, or a reject, at its own instant): whose answer everyone got shows who won.
  const outcomes = await race(24, (repo, i) =>
    repo.settleAction(user, thread.id, actionId, i % 3 === 0 ? { status: 'rejected' } : { status: 'confirmed', result: { id: `result-${i}` }, resultId: `result-${i}` }, at(i + 1)),
  );
  const answers = outcomes.map((o) => {
    assert.equal(o.status, 'fulfilled', o.status === 'rejected' ? String(o.reason) : '');
    return (o as PromiseFulfilledResult<unknown>).value;
  });
  const stored = await chats[1]!.getAction(user, thread.id, actionId);
  assert.notEqual(stored.status, 'proposed');
  for (const answer of answers) assert.deepEqual(answer, stored, 'each settle answers the one stored outcome');
  const [row] = await sql()<{ updated_at: number; result_id: string | null; status: string }[]>`SELECT updated_at, result_id, status FROM chat_actions WHERE id = ${actionId}`;
  const winner = row!.updated_at - now.getTime() - 1;
  assert.ok(winner >= 0 && winner < 24);
  assert.deepEqual([row!.status, row!.result_id], winner % 3 === 0 ? ['rejected', null] : ['confirmed', `result-${winner}`], 'the stored outcome is entirely one caller’s');
});

test('pairs of messages added to one thread at once: consecutive in seq, counted, titled by the first', async () => {
  const user = await pgUser();
  // Several rounds: an interleaving, when the code allows one, does not happen every time.
  for (let round = 0; round < 5; round++) {
    const thread = await chats[0]!.createThread(user, undefined, now);
    const n = 20;
    const outcomes = await race(n, (repo, i) =>
      repo.addMessages(user, thread.id, [{ role: 'user', content: `question ${i}` }, assistant(`answer ${i}`, [{ id: randomUUID(), summary: `p${i}` }])], at(i)),
    );
    assert.ok(outcomes.every((o) => o.status === 'fulfilled'), String(outcomes.find((o) => o.status === 'rejected')?.reason));
    const messages = await chats[1]!.listMessages(user, thread.id);
    assert.equal(messages.length, 2 * n);
    for (let k = 0; k < n; k++) {
      const [q, a] = [messages[2 * k]!, messages[2 * k + 1]!];
      const i = q.content.replace('question ', '');
      assert.equal(q.role, 'user');
      assert.equal(a.content, `answer ${i}`, 'a question is followed by its own answer: no pair is interleaved with another');
      assert.equal(a.actions?.length, 1);
    }
    const seqs = (await sql()<{ seq: number }[]>`SELECT seq FROM chat_messages WHERE thread_id = ${thread.id} ORDER BY seq`).map((r) => r.seq);
    assert.equal(new Set(seqs).size, 2 * n, 'no seq taken twice');
    const stored = await chats[0]!.getThread(user, thread.id);
    assert.equal(stored.messageCount, 2 * n);
    assert.equal(stored.title, messages[0]!.content, 'named after the first question stored');
    const last = await chats[0]!.lastMessages(thread.id, 4);
    assert.deepEqual(last, messages.slice(-4));
  }
});

test('a thread deleted while messages are added: each addition committed before it (and went with it) or is not_found', async () => {
  const user = await pgUser();
  for (let round = 0; round < 5; round++) {
    const thread = await chats[0]!.createThread(user, undefined, now);
    const adds = race(20, (repo, i) => repo.addMessages(user, thread.id, [{ role: 'user', content: `q${i}` }, assistant(`a${i}`, [{ id: randomUUID(), summary: 's' }])], at(i)));
    const removed = chats[round % 2]!.deleteThread(user, thread.id);
    const [outcomes] = await Promise.all([adds, removed]);
    for (const o of outcomes) assert.ok(o.status === 'fulfilled' || isNotFound(o.reason), `fulfilled or not_found: ${o.status === 'rejected' ? String(o.reason) : ''}`);
    const [left] = await sql()<{ messages: number; actions: number }[]>`
      SELECT (SELECT count(*) FROM chat_messages WHERE thread_id = ${thread.id}) AS messages,
             (SELECT count(*) FROM chat_actions WHERE thread_id = ${thread.id}) AS actions`;
    assert.deepEqual(left, { messages: 0, actions: 0 }, 'nothing outlives the thread');
    await assert.rejects(chats[1]!.getThread(user, thread.id), isNotFound);
    await assert.rejects(chats[1]!.addMessages(user, thread.id, [{ role: 'user', content: 'late' }], now), isNotFound);
  }
});
