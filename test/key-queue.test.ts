// One step at a time per key (src/chat/key-queue.ts): what keeps a proposal's read and the decision made from it
// together now that the repository between them is asynchronous.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyQueue } from '../src/chat/key-queue.ts';

/** A promise and the function that settles it, for steps that end when the test says so. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

test('steps under one key run one after another, in the order they were queued', async () => {
  const queue = keyQueue();
  const order: string[] = [];
  const first = gate();
  const a = queue('p1', async () => {
    order.push('a starts');
    await first.opened;
    order.push('a ends');
    return 'a';
  });
  const b = queue('p1', async () => {
    order.push('b runs');
    return 'b';
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(order, ['a starts'], 'the second step waits for the first');
  first.open();
  assert.deepEqual(await Promise.all([a, b]), ['a', 'b']);
  assert.deepEqual(order, ['a starts', 'a ends', 'b runs']);
});

test('a step under another key does not wait, and a failed step lets the next one run', async () => {
  const queue = keyQueue();
  const held = gate();
  const slow = queue('p1', () => held.opened.then(() => 'slow'));
  assert.equal(await queue('p2', async () => 'other key'), 'other key');
  const failing = queue('p1', async () => {
    throw new Error('the proposal is gone');
  });
  const after = queue('p1', async () => 'after the failure');
  held.open();
  assert.equal(await slow, 'slow');
  await assert.rejects(failing, /proposal is gone/);
  assert.equal(await after, 'after the failure');
});
