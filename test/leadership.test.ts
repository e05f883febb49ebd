// Leaders of the loops that run once in a deployment (issue 33, point 4): LocalLeadership's contract, and the webhook
// dispatcher and the backup schedule running only in the instance that leads them, over sibling leaderships (what a
// second instance would see). Waits are on the receiver's requests and log lines, never on sleeps.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { startBackupSchedule } from '../src/backup/index.ts';
import type { ImportJob } from '../src/customers/index.ts';
import { LocalLeadership, openSqliteEngine, type SqliteEngine } from '../src/db/engine.ts';
import { openWebhooks, type Webhooks } from '../src/webhooks/index.ts';
import { tempDir } from './support/temp-dir.ts';
import { startWebhookReceiver } from './support/webhook-receiver.ts';
import { recordingLogger } from './support/recording-logger.ts';

test('the first instance to ask leads a loop, and a sibling asking then is refused', async () => {
  const first = new LocalLeadership();
  const second = first.sibling();
  assert.equal(await first.tryLead('loop'), true);
  assert.equal(await second.tryLead('loop'), false);
});

test('the leader asking again still leads, and its sibling is still refused', async () => {
  const first = new LocalLeadership();
  const second = first.sibling();
  await first.tryLead('loop');
  assert.equal(await first.tryLead('loop'), true);
  assert.equal(await second.tryLead('loop'), false);
});

test('resigning hands the loop over: the sibling that asks next leads it, and the one that resigned is refused', async () => {
  const first = new LocalLeadership();
  const second = first.sibling();
  await first.tryLead('loop');
  await first.resign('loop');
  assert.equal(await second.tryLead('loop'), true);
  assert.equal(await first.tryLead('loop'), false);
});

test('a sibling that does not lead resigning leaves the leader in place', async () => {
  const first = new LocalLeadership();
  const second = first.sibling();
  await first.tryLead('loop');
  await second.resign('loop');
  assert.equal(await second.tryLead('loop'), false);
  assert.equal(await first.tryLead('loop'), true);
});

test('each loop has its own leader', async () => {
  const first = new LocalLeadership();
  const second = first.sibling();
  assert.equal(await first.tryLead('one loop'), true);
  assert.equal(await second.tryLead('another loop'), true);
  assert.equal(await first.tryLead('another loop'), false);
});

/** Returns the engine on a new database; the caller closes it. */
function newEngine(): SqliteEngine {
  return openSqliteEngine(join(tempDir('campaigns-leadership-'), 'test.db'));
}

/** An import job as it ended, the payload of a `customers.import_completed` event. */
function finishedJob(id: string): ImportJob {
  const at = new Date().toISOString();
  return { id, status: 'completed', bytesRead: 10, rowsRead: 1, imported: 1, updated: 0, skipped: 0, onExisting: 'skip', ignoredColumns: [], startedAt: at, finishedAt: at, createdBy: 'someone' };
}

test('two webhook dispatchers over sibling leaderships send an event once, and the second takes over when the leader stops', async (t) => {
  const engine = newEngine();
  const receiver = await startWebhookReceiver();
  const { logger, lines } = recordingLogger();
  const options = { clock: () => new Date(), fetch: globalThis.fetch, logger, retryScheduleMs: [60_000], timeoutMs: 10_000, publicUrl: () => 'http://127.0.0.1' };
  const leader: Webhooks = openWebhooks(engine, options);
  const other: Webhooks = openWebhooks(engine, { ...options, leadership: engine.leadership.sibling() });
  t.after(async () => {
    await Promise.all([leader.stop(), other.stop()]);
    await receiver.close();
    await engine.close();
  });
  const endpoint = await leader.createWebhook({ url: receiver.url, events: ['customers.import_completed'], description: undefined }, new Date());

  // Written through the other instance's outbox: both dispatchers are woken, and only the leader sends.
  await engine.write(() => other.outbox.importFinished(finishedJob('job-1')));
  const first = await receiver.nth(1);
  assert.equal(JSON.parse(first.body).data.id, 'job-1');
  assert.equal(await engine.leadership.tryLead('webhook-dispatcher'), true, 'the dispatcher opened first leads');
  // Stopping waits for the attempt under way and gives up leading; the event was sent and stored as succeeded.
  await leader.stop();

  await engine.write(() => leader.outbox.importFinished(finishedJob('job-2')));
  const second = await receiver.nth(2);
  assert.equal(JSON.parse(second.body).data.id, 'job-2');
  assert.equal(await engine.leadership.tryLead('webhook-dispatcher'), false, 'the other dispatcher leads now');
  await other.stop(); // a copy of either event under way would be waited for here

  assert.equal(receiver.requests.length, 2, `each event once: ${JSON.stringify(receiver.requests.map((r) => r.body))}`);
  assert.equal(receiver.distinctIds(), 2);
  const seq = await leader.endpoints.seqOf(endpoint.id);
  const { items } = await leader.deliveries.listDeliveries(seq, 1, 10);
  assert.deepEqual(
    items.map((d) => [d.status, d.attempt, d.responseStatus]),
    [
      ['succeeded', 1, 200],
      ['succeeded', 1, 200],
    ],
    JSON.stringify(lines),
  );
});

test('the backup schedule backs up only while it leads: a sibling takes no backup until the leader stops', { timeout: 30_000 }, async (t) => {
  const engine = newEngine();
  const leadership = new LocalLeadership();
  const options = { databasePath: engine.db.name, dir: join(tempDir('campaigns-leadership-backups-'), 'backups'), everyHours: 0.0002, keep: 100 }; // 0.72 s apart
  const leaderLog = recordingLogger();
  const otherLog = recordingLogger();
  const leader = startBackupSchedule({ ...options, logger: leaderLog.logger, leadership });
  const other = startBackupSchedule({ ...options, logger: otherLog.logger, leadership: leadership.sibling() });
  // The schedule's timers keep no process alive (a service's server does): this test's wait must.
  const alive = setInterval(() => {}, 60_000);
  t.after(async () => {
    clearInterval(alive);
    await Promise.all([leader.stop(), other.stop()]);
    await engine.close();
  });

  await leaderLog.waitFor((line) => line.msg === 'backup');
  const leaderStopping = Date.now();
  await leader.stop();
  const taken = await otherLog.waitFor((line) => line.msg === 'backup');
  await other.stop();

  // A scheduled backup is named after the instant it started: the sibling started none before the leader stopped.
  const startOf = (line: Record<string, unknown>) => {
    const [, day, hours, minutes, seconds] = /campaigns-(\d{4}-\d\d-\d\d)T(\d\d)-(\d\d)-(\d\d\.\d{3})Z\.db$/.exec(String(line.file))!;
    return Date.parse(`${day}T${hours}:${minutes}:${seconds}Z`);
  };
  const started = otherLog.lines.filter((line) => line.msg === 'backup' || line.msg === 'backup failed' || line.msg === 'backup abandoned: the service is stopping');
  assert.ok(started.length >= 1 && started.includes(taken));
  for (const line of started) assert.ok(startOf(line) >= leaderStopping, `the sibling backed up while the leader led: ${JSON.stringify(line)}`);
  assert.ok(leaderLog.lines.filter((line) => line.msg === 'backup').every((line) => startOf(line) < leaderStopping));
});
