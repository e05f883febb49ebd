// Segments, campaigns and their versions on PostgreSQL (src/db/postgres/), against the real server `npm run test:pg`
// starts (TEST_DATABASE_URL), in a database of their own. The same calls are made on the SQLite repositories, and the
// answers must be the same but for ids and condition ids. Then the races PostgreSQL's concurrency exposes, run for real:
// two engines on one database stand for two instances, and the racing calls are all started before any is awaited.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createCampaignRepository, type CampaignMove, type CampaignRepository, type NewCampaign } from '../../src/db/campaigns.ts';
import { openSqliteEngine, type SqliteEngine } from '../../src/db/engine.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { createPgCampaignRepository, type PgCampaignHooks } from '../../src/db/postgres/campaigns.ts';
import { createPgSegmentRepository } from '../../src/db/postgres/segments.ts';
import { createPgUserRepository } from '../../src/db/postgres/users.ts';
import { createSegmentRepository, type SegmentRepository } from '../../src/db/segments.ts';
import { createUserRepository } from '../../src/db/users.ts';
import { AppError } from '../../src/domain/errors.ts';
import { freshInstances } from '../support/postgres.ts';

const start = new Date('2026-03-01T12:00:00.000Z').getTime();
/** The n-th instant of a scenario: distinct instants keep "newest first" free of ties broken by random ids. */
const t = (n: number) => new Date(start + n * 1000);

let engines: PostgresEngine[] = [];
let sqlite: SqliteEngine;
let folder: string;
/** The user every row is written by, on PostgreSQL and on SQLite. */
let pgUser: string;
let sqliteUser: string;

before(async () => {
  engines = await freshInstances('campaigns');
  folder = mkdtempSync(join(tmpdir(), 'campaigns-pg-'));
  sqlite = openSqliteEngine(join(folder, 'campaigns.db'));
  const user = { email: 'lead@example.com', fullName: 'Lena Lead', role: 'marketing_lead' as const, passwordHash: 'scrypt$hash' };
  pgUser = (await createPgUserRepository(engines[0]!).insertUser(user, t(0))).id;
  sqliteUser = (await createUserRepository(sqlite).insertUser(user, t(0))).id;
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await sqlite?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

const isConflict = (error: unknown) => error instanceof AppError && error.code === 'conflict';

const draft = (segmentId: string, userId: string, channel: NewCampaign['channel'] = 'email', n = 1): NewCampaign => ({
  segmentId,
  segmentName: 'Spain',
  objective: 'Win back lapsed buyers',
  channel,
  tone: 'friendly',
  title: `Title ${n}`,
  message: `Message ${n}`,
  callToAction: `Act ${n}`,
  model: 'model-1',
  createdBy: userId,
});

const copy = (n: number) => ({ title: `Title ${n}`, message: `Message ${n}`, callToAction: `Act ${n}` });

/** An id no row has, the same on both engines. */
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

/**
 * Runs every function of both repositories through one scenario and returns what each call answered (a rejection
 * as its code and message), and what `onMove` heard.
 */
async function scenario(segments: SegmentRepository, campaigns: CampaignRepository, moves: CampaignMove[], user: string): Promise<unknown[]> {
  const log: unknown[] = [];
  const step = async (name: string, call: () => Promise<unknown>) => {
    try {
      log.push([name, await call()]);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      log.push([name, { code: error.code, message: error.message }]);
    }
  };

  // Segments.
  const s1 = await segments.insertSegment({ name: 'Spain', conditions: [{ field: 'country', operator: 'eq', value: 'ES' }], matchCount: 5, createdBy: user }, t(1));
  const s2 = await segments.insertSegment(
    { name: 'Active', conditions: [{ field: 'status', operator: 'eq', value: 'active' }, { field: 'totalTransactions', operator: 'gte', value: 3 }], matchCount: 3, createdBy: user },
    t(2),
  );
  log.push(['inserted', [s1, s2]]);
  await step('list segments', () => segments.listSegments());
  await step('rename', () => segments.updateSegment(s1.id, { name: 'Spain only', matchCount: 6 }, t(3)));
  await step('new conditions', () => segments.updateSegment(s2.id, { conditions: [{ field: 'country', operator: 'in', value: ['FR', 'DE'] }], matchCount: 0 }, t(4)));
  await step('update unknown', () => segments.updateSegment(UNKNOWN, { name: 'x', matchCount: 1 }, t(5)));
  await step('store count', () => segments.storeMatchCount(s1.id, 9));
  await step('get', () => segments.getSegment(s1.id));
  await step('find unknown', () => segments.findSegment(UNKNOWN));
  await step('get unknown', () => segments.getSegment(UNKNOWN));
  await step('delete', () => segments.deleteSegment(s2.id));
  await step('delete again', () => segments.deleteSegment(s2.id));
  await step('list after delete', () => segments.listSegments());

  // Campaigns: drafts, lists and their totals.
  const c1 = await campaigns.insertCampaign(draft(s1.id, user, 'email', 1), t(10));
  const c2 = await campaigns.insertCampaign(draft(s1.id, user, 'sms', 2), t(11));
  const c3 = await campaigns.insertCampaign(draft(UNKNOWN, user, 'push', 3), t(12));
  log.push(['drafted', [c1, c2, c3]]);
  for (const [filter, page, limit] of [[{}, 1, 2], [{}, 2, 2], [{}, 3, 2], [{ channel: 'sms' }, 1, 10], [{ status: 'draft', segmentId: s1.id }, 1, 10], [{ status: 'sent' }, 1, 10]] as const) {
    await step(`list ${JSON.stringify(filter)} ${page}`, () => campaigns.listCampaigns(filter, page, limit));
  }

  // Versions.
  await step('edit', () => campaigns.editDraft(c1.id, copy(11), user, t(13)));
  await step('revise', () => campaigns.reviseDraft(c1.id, copy(12), { instruction: 'shorter', model: 'model-2', userId: user }, t(14)));
  await step('variants', () => campaigns.addVariants(c1.id, [copy(13), copy(14), copy(15)], { instruction: null, model: 'model-3', userId: user }, t(15)));
  await step('variants with instruction', () => campaigns.addVariants(c1.id, [copy(16), copy(17)], { instruction: 'bolder', model: 'model-3', userId: user }, t(15)));
  await step('restore', () => campaigns.restoreVersion(c1.id, 4, user, t(16)));
  await step('restore unknown version', () => campaigns.restoreVersion(c1.id, 99, user, t(16)));
  await step('restore unknown campaign', () => campaigns.restoreVersion(UNKNOWN, 1, user, t(16)));
  await step('edit unknown', () => campaigns.editDraft(UNKNOWN, copy(1), user, t(16)));
  await step('variants unknown', () => campaigns.addVariants(UNKNOWN, [copy(1), copy(2)], { instruction: null, model: 'm', userId: user }, t(16)));
  await step('versions', () => campaigns.listVersions(c1.id));
  await step('versions unknown', () => campaigns.listVersions(UNKNOWN));

  // The review workflow and the frozen audience.
  await step('submit', () => campaigns.moveCampaign(c1.id, { from: 'draft', to: 'in_review', note: 'please look', userId: user }, t(17)));
  await step('edit in review', () => campaigns.editDraft(c1.id, copy(20), user, t(18)));
  await step('revise in review', () => campaigns.reviseDraft(c1.id, copy(20), { instruction: 'x', model: 'm', userId: user }, t(18)));
  await step('variants in review', () => campaigns.addVariants(c1.id, [copy(20), copy(21)], { instruction: null, model: 'm', userId: user }, t(18)));
  await step('restore in review', () => campaigns.restoreVersion(c1.id, 1, user, t(18)));
  await step('restore unknown version in review', () => campaigns.restoreVersion(c1.id, 99, user, t(18)));
  await step('audience in review', () => campaigns.getAudience(c1.id));
  await step('stale move', () => campaigns.moveCampaign(c1.id, { from: 'draft', to: 'in_review', note: null, userId: user }, t(18)));
  await step('move unknown', () => campaigns.moveCampaign(UNKNOWN, { from: 'draft', to: 'in_review', note: null, userId: user }, t(18)));
  const audience = { conditions: s1.conditions, description: 'customers in ES', size: 9 };
  await step('approve', () => campaigns.moveCampaign(c1.id, { from: 'in_review', to: 'approved', note: null, userId: user, audience }, t(19)));
  await step('audience approved', () => campaigns.getAudience(c1.id));
  await step('send', () => campaigns.moveCampaign(c1.id, { from: 'approved', to: 'sent', note: 'gone', userId: user }, t(20)));
  await step('audience sent', () => campaigns.getAudience(c1.id));
  await step('audience unknown', () => campaigns.getAudience(UNKNOWN));
  await step('c2 submit', () => campaigns.moveCampaign(c2.id, { from: 'draft', to: 'in_review', note: null, userId: user }, t(21)));
  await step('c2 approve', () => campaigns.moveCampaign(c2.id, { from: 'in_review', to: 'approved', note: null, userId: user, audience: { ...audience, size: 4 } }, t(22)));
  await step('c2 reopen', () => campaigns.moveCampaign(c2.id, { from: 'approved', to: 'draft', note: 'redo', userId: user }, t(23)));
  await step('c2 audience after reopen', () => campaigns.getAudience(c2.id));

  // Deleting, events, and the lists after all this.
  await step('delete sent', () => campaigns.deleteDraft(c1.id));
  await step('delete draft', () => campaigns.deleteDraft(c3.id));
  await step('delete deleted', () => campaigns.deleteDraft(c3.id));
  await step('get deleted', () => campaigns.getCampaign(c3.id));
  await step('find deleted', () => campaigns.findCampaign(c3.id));
  await step('versions of deleted', () => campaigns.listVersions(c3.id));
  await step('events', () => campaigns.listEvents(c1.id));
  await step('events c2', () => campaigns.listEvents(c2.id));
  await step('events unknown', () => campaigns.listEvents(UNKNOWN));
  for (const filter of [{}, { status: 'sent' }, { status: 'draft' }, { segmentId: s1.id }, { channel: 'push' }] as const) {
    await step(`list after ${JSON.stringify(filter)}`, () => campaigns.listCampaigns(filter, 1, 10));
  }

  // A segment deleted while campaigns reference it: they stay, with its id and name.
  await step('delete referenced segment', () => segments.deleteSegment(s1.id));
  await step('campaign of deleted segment', () => campaigns.getCampaign(c2.id));
  log.push(['moves', moves]);
  return log;
}

/** The transcript as JSON with every uuid and condition id replaced by its rank of first appearance. */
function normalized(log: unknown[], user: string): unknown {
  const names = new Map<string, string>([[user, 'user'], [UNKNOWN, 'unknown']]);
  const text = JSON.stringify(log).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|cnd_[A-Za-z0-9_-]{8}/g, (id) => {
    if (!names.has(id)) names.set(id, `id${names.size}`);
    return names.get(id)!;
  });
  return JSON.parse(text);
}

test('every function answers on PostgreSQL as on SQLite: orderings, totals, errors, versions, frozen audiences, hooks', async () => {
  const pgMoves: CampaignMove[] = [];
  const sqliteMoves: CampaignMove[] = [];
  const pgLog = await scenario(
    createPgSegmentRepository(engines[0]!),
    createPgCampaignRepository(engines[0]!, { onMove: async (move) => void pgMoves.push(move) }),
    pgMoves,
    pgUser,
  );
  const sqliteLog = await scenario(createSegmentRepository(sqlite), createCampaignRepository(sqlite, { onMove: (move) => void sqliteMoves.push(move) }), sqliteMoves, sqliteUser);
  assert.equal(pgMoves.length, 6, 'onMove heard every move, and only the moves that happened');
  assert.deepEqual(normalized(pgLog, pgUser), normalized(sqliteLog, sqliteUser));
  // A few answers spelled out, so that both engines being wrong the same way is caught too.
  const answers = new Map((normalized(pgLog, pgUser) as [string, unknown][]).map(([name, answer]) => [name, answer]));
  assert.deepEqual((answers.get('versions') as { version: number }[]).map((v) => v.version), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual(answers.get('stale move'), { code: 'conflict', message: 'The campaign changed meanwhile; read it again and retry.' });
  assert.deepEqual(answers.get('edit in review'), { code: 'conflict', message: 'Only drafts can be edited; this campaign is in_review.' });
  assert.equal((answers.get('audience approved') as { sizeAtApproval: number }).sizeAtApproval, 9);
  assert.equal(answers.get('c2 audience after reopen'), null, 'cleared (undefined, null once in JSON)');
  assert.deepEqual(answers.get('list {} 1'), { items: (answers.get('drafted') as unknown[]).slice(1).reverse(), total: 3 });
  assert.equal((answers.get('campaign of deleted segment') as { segmentName: string }).segmentName, 'Spain');
});

test('onMove runs inside the move: its engine.write joins the transaction, and its failure undoes the move', async () => {
  const [engine] = engines as [PostgresEngine];
  const segment = await createPgSegmentRepository(engine).insertSegment({ name: 'Hooked', conditions: [], matchCount: 0, createdBy: pgUser }, t(1));
  let hook: NonNullable<PgCampaignHooks['onMove']> = async () => {};
  const campaigns = createPgCampaignRepository(engine, { onMove: (move) => hook(move) });
  const campaign = await campaigns.insertCampaign(draft(segment.id, pgUser), t(2));

  hook = async (move) => {
    // Seen from inside: only the move's own transaction sees the new status before it commits.
    const [inside] = await engine.write((tx) => tx<{ status: string }[]>`SELECT status FROM campaigns WHERE id = ${move.campaign.id}`);
    const [outside] = await engines[1]!.sql<{ status: string }[]>`SELECT status FROM campaigns WHERE id = ${move.campaign.id}`;
    assert.deepEqual([inside!.status, outside!.status], [move.to, move.from]);
    await engine.write((tx) => tx`INSERT INTO meta (key, value) VALUES (${`moved ${move.campaign.id}`}, 1)`);
  };
  await campaigns.moveCampaign(campaign.id, { from: 'draft', to: 'in_review', note: null, userId: pgUser }, t(3));
  const [written] = await engine.sql<{ value: number }[]>`SELECT value FROM meta WHERE key = ${`moved ${campaign.id}`}`;
  assert.equal(written?.value, 1, "the hook's write committed with the move");

  hook = async (move) => {
    await engine.write((tx) => tx`UPDATE meta SET value = 2 WHERE key = ${`moved ${move.campaign.id}`}`);
    throw new Error('the outbox failed');
  };
  const audience = { conditions: [], description: 'everyone', size: 0 };
  await assert.rejects(campaigns.moveCampaign(campaign.id, { from: 'in_review', to: 'approved', note: null, userId: pgUser, audience }, t(4)), /the outbox failed/);
  assert.equal((await campaigns.getCampaign(campaign.id)).status, 'in_review', 'the move was rolled back');
  assert.equal(await campaigns.getAudience(campaign.id), undefined);
  assert.deepEqual((await campaigns.listEvents(campaign.id)).map((e) => e.to), ['draft', 'in_review']);
  const [kept] = await engine.sql<{ value: number }[]>`SELECT value FROM meta WHERE key = ${`moved ${campaign.id}`}`;
  assert.equal(kept?.value, 1, "the hook's write was rolled back with it");
});

test('list totals are never stale across instances', async () => {
  const [a, b] = engines.map((e) => createPgCampaignRepository(e)) as [CampaignRepository, CampaignRepository];
  const segmentId = randomUUID();
  assert.equal((await a.listCampaigns({ segmentId }, 1, 10)).total, 0);
  const made = await b.insertCampaign(draft(segmentId, pgUser), t(1));
  assert.deepEqual(await a.listCampaigns({ segmentId }, 1, 10), { items: [made], total: 1 }, 'an insert by the other instance');
  assert.equal((await a.listCampaigns({ segmentId, status: 'draft' }, 1, 10)).total, 1);
  await b.moveCampaign(made.id, { from: 'draft', to: 'in_review', note: null, userId: pgUser }, t(2));
  assert.equal((await a.listCampaigns({ segmentId, status: 'draft' }, 1, 10)).total, 0, 'a move by the other instance');
  assert.equal((await a.listCampaigns({ segmentId, status: 'in_review' }, 1, 10)).total, 1);
});

test('race: 20 edits and revisions of one draft at once, on two instances, number versions 2 to 21', async () => {
  const repos = engines.map((e) => createPgCampaignRepository(e));
  const campaign = await repos[0]!.insertCampaign(draft(randomUUID(), pgUser), t(1));
  const outcomes = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      i % 4 < 2
        ? repos[i % 2]!.editDraft(campaign.id, copy(100 + i), pgUser, t(2))
        : repos[i % 2]!.reviseDraft(campaign.id, copy(100 + i), { instruction: `try ${i}`, model: 'model-2', userId: pgUser }, t(2)),
    ),
  );
  assert.deepEqual(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason)), []);
  const versions = await repos[1]!.listVersions(campaign.id);
  assert.deepEqual(versions.map((v) => v.version), Array.from({ length: 21 }, (_, i) => i + 1), 'no gap, no duplicate');
  assert.deepEqual(new Set(versions.slice(1).map((v) => v.title)).size, 20, 'each change is one version');
  // Each revision's note names the version it made, and the current copy is the last version's.
  const notes = (await repos[0]!.listEvents(campaign.id)).flatMap((e) => (e.note ? [e.note] : []));
  const noted = notes.map((note) => Number(/^Revised as version (\d+): try (\d+)$/.exec(note)![1]));
  assert.equal(noted.length, 10);
  for (const [i, number] of noted.entries()) assert.equal(versions[number - 1]!.instruction, /: (.*)$/.exec(notes[i]!)![1]);
  const current = await repos[0]!.getCampaign(campaign.id);
  assert.equal(current.title, versions.at(-1)!.title);
});

test('race: variants and restores at once with edits keep one number per version', async () => {
  const repos = engines.map((e) => createPgCampaignRepository(e));
  const campaign = await repos[0]!.insertCampaign(draft(randomUUID(), pgUser), t(1));
  const outcomes = await Promise.allSettled(
    Array.from({ length: 12 }, (_, i) => {
      const repo = repos[i % 2]!;
      if (i % 3 === 0) return repo.addVariants(campaign.id, [copy(i), copy(i + 50)], { instruction: null, model: 'm', userId: pgUser }, t(2));
      if (i % 3 === 1) return repo.restoreVersion(campaign.id, 1, pgUser, t(2));
      return repo.editDraft(campaign.id, copy(200 + i), pgUser, t(2));
    }),
  );
  assert.ok(outcomes.every((o) => o.status === 'fulfilled'));
  const versions = await repos[0]!.listVersions(campaign.id);
  assert.deepEqual(versions.map((v) => v.version), Array.from({ length: 1 + 4 * 2 + 4 + 4 }, (_, i) => i + 1));
});

test('race: two approvals of one campaign at once: exactly one succeeds, the other is the conflict of a stale move', async () => {
  const heard: string[] = [];
  const repos = engines.map((e) =>
    createPgCampaignRepository(e, {
      // A write in the move's transaction, as the outbox makes: it holds the row while the other approval waits.
      onMove: async (move) => {
        await e.write((tx) => tx`INSERT INTO meta (key, value) VALUES (${`${move.to} ${move.campaign.id}`}, 1)`);
        heard.push(`${move.to} ${move.campaign.id}`);
      },
    }),
  );
  const audience = { conditions: [], description: 'everyone', size: 7 };
  // Several rounds, as one round may happen not to interleave.
  for (let round = 0; round < 20; round++) {
    const campaign = await repos[0]!.insertCampaign(draft(randomUUID(), pgUser), t(1));
    await repos[0]!.moveCampaign(campaign.id, { from: 'draft', to: 'in_review', note: null, userId: pgUser }, t(2));
    const outcomes = await Promise.allSettled(
      repos.map((repo, i) => repo.moveCampaign(campaign.id, { from: 'in_review', to: 'approved', note: `by ${i}`, userId: pgUser, audience: { ...audience, size: i } }, t(3))),
    );
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, `round ${round}: exactly one approval`);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    assert.ok(isConflict(refused.reason), `round ${round}: ${String(refused.reason)}`);
    assert.equal((refused.reason as Error).message, 'The campaign changed meanwhile; read it again and retry.');
    const events = await repos[1]!.listEvents(campaign.id);
    assert.deepEqual(events.map((e) => e.to), ['draft', 'in_review', 'approved'], `round ${round}: one approval in the trail`);
    const winner = (outcomes.find((o) => o.status === 'fulfilled') as PromiseFulfilledResult<unknown>).value;
    assert.equal(events[2]!.note, `by ${outcomes.indexOf(outcomes.find((o) => o.status === 'fulfilled')!)}`);
    assert.deepEqual(winner, await repos[1]!.getCampaign(campaign.id));
    assert.equal(heard.filter((h) => h === `approved ${campaign.id}`).length, 1, `round ${round}: onMove heard one approval`);
  }
});

test('race: a draft deleted while it is edited, and a segment deleted while a campaign is drafted for it', async () => {
  const repos = engines.map((e) => createPgCampaignRepository(e));
  const segments = engines.map((e) => createPgSegmentRepository(e));
  for (let round = 0; round < 10; round++) {
    const campaign = await repos[0]!.insertCampaign(draft(randomUUID(), pgUser), t(1));
    const [edited, deleted] = await Promise.allSettled([repos[0]!.editDraft(campaign.id, copy(9), pgUser, t(2)), repos[1]!.deleteDraft(campaign.id)]);
    assert.equal(deleted.status, 'fulfilled', 'the delete waits for the edit, or comes first');
    if (edited.status === 'rejected') assert.equal((edited.reason as AppError).code, 'not_found');
    const [left] = await engines[0]!.sql<{ n: number }[]>`SELECT count(*) AS n FROM campaign_versions WHERE campaign_id = ${campaign.id}`;
    assert.equal(left!.n, 0, 'no version outlives its campaign');

    // campaigns.segment_id is no reference (as on SQLite): both succeed, and the campaign keeps the segment's name.
    const segment = await segments[0]!.insertSegment({ name: 'Going', conditions: [], matchCount: 0, createdBy: pgUser }, t(1));
    const [made, gone] = await Promise.allSettled([repos[0]!.insertCampaign({ ...draft(segment.id, pgUser), segmentName: 'Going' }, t(2)), segments[1]!.deleteSegment(segment.id)]);
    assert.equal(gone.status, 'fulfilled');
    assert.equal(made.status, 'fulfilled');
    assert.equal(await segments[0]!.findSegment(segment.id), undefined);
    assert.equal((await repos[1]!.getCampaign((made as PromiseFulfilledResult<{ id: string }>).value.id)).segmentName, 'Going');
  }
});

test('race: concurrent updates of one segment all apply, the last one kept', async () => {
  const segments = engines.map((e) => createPgSegmentRepository(e));
  const segment = await segments[0]!.insertSegment({ name: 'Base', conditions: [], matchCount: 0, createdBy: pgUser }, t(1));
  const outcomes = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) => segments[i % 2]!.updateSegment(segment.id, { name: `Name ${i}`, matchCount: i }, t(2 + i))),
  );
  assert.ok(outcomes.every((o) => o.status === 'fulfilled'));
  const stored = await segments[1]!.getSegment(segment.id);
  const answered = outcomes.map((o) => (o as PromiseFulfilledResult<{ name: string; matchCount: number }>).value);
  assert.ok(answered.some((a) => a.name === stored.name && a.matchCount === stored.matchCount), 'the stored segment is one an update answered');
  assert.equal(stored.name, `Name ${stored.matchCount}`, 'name and count from the same update');
});
