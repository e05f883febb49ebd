// The in-memory implementations of state that instances will later share: rate counters, stream slots and the
// idempotency keys running in this process. The HTTP behaviour built on them is tested in auth, llm, chat-stream
// and idempotency tests.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SlidingWindowLimiter } from '../src/domain/rate-limiter.ts';
import { InMemorySlotPool, type SlotClaim } from '../src/domain/slot-pool.ts';
import { LocalInFlightRequests } from '../src/http/in-flight.ts';

const START = Date.parse('2026-01-01T00:00:00Z');
/** The instant `ms` after START. */
const at = (ms: number): Date => new Date(START + ms);

test('a rate counter allows `limit` attempts in the window, then gives the whole seconds until the oldest leaves it', async () => {
  const counter = new SlidingWindowLimiter({ limit: 2, windowMs: 10_000 });
  assert.equal(await counter.attempt('a', at(0)), 0);
  assert.equal(await counter.attempt('a', at(1_000)), 0);
  assert.equal(await counter.attempt('a', at(2_500)), 8); // the first leaves the window at 10 s: 7.5 s, rounded up
  assert.equal(await counter.attempt('b', at(2_500)), 0, 'keys count apart');
  assert.equal(await counter.attempt('a', at(10_001)), 0, 'the refused attempt was not recorded');
  assert.equal(await counter.attempt('a', at(10_002)), 1); // the one at 1 s leaves at 11 s
});

test('resetting a rate counter key forgets its attempts', async () => {
  const counter = new SlidingWindowLimiter({ limit: 1, windowMs: 60_000 });
  assert.equal(await counter.attempt('a', at(0)), 0);
  assert.equal(await counter.attempt('a', at(1)), 60);
  await counter.reset('a');
  assert.equal(await counter.attempt('a', at(2)), 0);
});

test('a rate counter keeps at most maxKeys keys, forgetting the least recently used', async () => {
  const counter = new SlidingWindowLimiter({ limit: 1, windowMs: 60_000 }, 2);
  await counter.attempt('a', at(0));
  await counter.attempt('b', at(0));
  await counter.attempt('c', at(0));
  assert.equal(await counter.attempt('a', at(1)), 0, 'a was evicted');
  assert.equal(await counter.attempt('c', at(1)), 60, 'c is still counted');
});

/** The release of a claim that must have been granted. */
function released(claim: SlotClaim): () => Promise<void> {
  assert.equal(claim.held, true, 'the slot was granted');
  return (claim as Extract<SlotClaim, { held: true }>).release;
}

test('a slot pool grants perHolder slots to one holder, then refuses that holder as `holder`', async () => {
  const pool = new InMemorySlotPool(2, 10);
  const first = released(await pool.acquire('u1'));
  released(await pool.acquire('u1'));
  assert.deepEqual(await pool.acquire('u1'), { held: false, full: 'holder' });
  released(await pool.acquire('u2'));
  await first();
  released(await pool.acquire('u1'));
});

test('a slot pool refuses anyone as `pool` once total slots are held, and a release frees one only once', async () => {
  const pool = new InMemorySlotPool(2, 2);
  const first = released(await pool.acquire('u1'));
  released(await pool.acquire('u2'));
  assert.deepEqual(await pool.acquire('u3'), { held: false, full: 'pool' });
  await first();
  await first();
  released(await pool.acquire('u3'));
  assert.deepEqual(await pool.acquire('u4'), { held: false, full: 'pool' }, 'the second release freed nothing');
});

test('an in-flight request is seen under its slot until it ends, and waiting on it resolves when it ends', async () => {
  const running = new LocalInFlightRequests();
  assert.equal(running.settled('u1\nk'), undefined);
  const end = running.begin('u1\nk');
  const waiting = running.settled('u1\nk');
  assert.ok(waiting, 'the running request is seen');
  assert.equal(running.settled('u2\nk'), undefined, 'slots are apart');
  let resolved = false;
  const watched = waiting.then(() => (resolved = true));
  await Promise.resolve();
  assert.equal(resolved, false, 'still running');
  end();
  await watched;
  assert.equal(running.settled('u1\nk'), undefined, 'an ended request is forgotten');
});

test('the end of an earlier request under a slot leaves a later one in flight', async () => {
  const running = new LocalInFlightRequests();
  const endFirst = running.begin('s');
  const endSecond = running.begin('s');
  endFirst();
  assert.ok(running.settled('s'), 'the second is still seen');
  endSecond();
  assert.equal(running.settled('s'), undefined);
});
