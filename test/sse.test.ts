// The SSE decoder against the WHATWG parsing rules, fed in every way a network may split a body.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEvents, type SseEvent } from '../src/llm/sse.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

async function* fromChunks(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

async function decode(chunks: Uint8Array[]): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readEvents(fromChunks(chunks))) events.push(event);
  return events;
}

const decodeText = (text: string) => decode([bytes(text)]);

// Every rule at once: LF, CRLF and CR line ends, comments, event names, multi-line data, a leading space, and
// characters of two, three and four UTF-8 bytes.
const MIXED = ': keep-alive\n\nevent: first\ndata: one\r\ndata:  two\r\n\r\ndata:é € 🙂\r\rdata\nevent: last\n\n';
const MIXED_EVENTS: SseEvent[] = [
  { event: 'first', data: 'one\n two' },
  { data: 'é € 🙂' },
  { event: 'last', data: '' },
];

test('decodes one chunk holding every kind of line', async () => {
  assert.deepEqual(await decodeText(MIXED), MIXED_EVENTS);
});

test('decodes the same events however the bytes are split in two', async () => {
  const all = bytes(MIXED);
  for (let at = 0; at <= all.length; at++) {
    assert.deepEqual(await decode([all.slice(0, at), all.slice(at)]), MIXED_EVENTS, `split at byte ${at}`);
  }
});

test('decodes the same events fed one byte at a time', async () => {
  const all = bytes(MIXED);
  assert.deepEqual(await decode([...all].map((b) => Uint8Array.of(b))), MIXED_EVENTS);
});

test('decodes the same events when split at any two places', async () => {
  const all = bytes(MIXED);
  for (let a = 1; a < all.length; a++) {
    for (let b = a; b < all.length; b++) {
      const events = await decode([all.slice(0, a), all.slice(a, b), all.slice(b)]);
      assert.deepEqual(events, MIXED_EVENTS, `split at bytes ${a} and ${b}`);
    }
  }
});

test('CRLF ends lines', async () => {
  assert.deepEqual(await decodeText('data: a\r\n\r\ndata: b\r\n\r\n'), [{ data: 'a' }, { data: 'b' }]);
});

test('a lone CR ends lines, and a CR then LF across chunks is one line end', async () => {
  assert.deepEqual(await decodeText('data: a\r\rdata: b\r\r'), [{ data: 'a' }, { data: 'b' }]);
  // Were the LF taken as a second line end, it would dispatch `a` alone.
  assert.deepEqual(await decode([bytes('data: a\r'), bytes('\ndata: b\r'), bytes('\n\r\n')]), [{ data: 'a\nb' }]);
});

test('data lines of one event are joined by newlines', async () => {
  assert.deepEqual(await decodeText('data: {"a":\ndata: 1}\ndata:\n\n'), [{ data: '{"a":\n1}\n' }]);
});

test('comment lines are ignored and do not end an event', async () => {
  assert.deepEqual(await decodeText(':hello\ndata: x\n: ping\ndata: y\n\n:\n\n'), [{ data: 'x\ny' }]);
});

test('the event field names the next event only', async () => {
  assert.deepEqual(await decodeText('event: delta\ndata: 1\n\ndata: 2\n\n'), [{ event: 'delta', data: '1' }, { data: '2' }]);
});

test('only one space after the colon is stripped', async () => {
  assert.deepEqual(await decodeText('data:  two spaces\n\ndata:none\n\n'), [{ data: ' two spaces' }, { data: 'none' }]);
});

test('a blank line without data dispatches nothing and forgets the event name', async () => {
  assert.deepEqual(await decodeText('event: orphan\n\n\n\ndata: x\n\n'), [{ data: 'x' }]);
});

test('id and retry are ignored; a line with an unknown field is reported at once as its own event', async () => {
  assert.deepEqual(await decodeText('id: 7\nretry: 100\ndata: x\n\n'), [{ data: 'x' }]);
  assert.deepEqual(await decodeText('data: x\nerror: {"code":500}\n\ndata: [DONE]\n\n'), [{ field: 'error', data: '{"code":500}' }, { data: 'x' }, { data: '[DONE]' }]);
});

test('an event cut off by the end of the body is dropped', async () => {
  assert.deepEqual(await decodeText('data: whole\n\ndata: partial\n'), [{ data: 'whole' }]);
  assert.deepEqual(await decodeText('data: whole\n\ndata: partial'), [{ data: 'whole' }]);
});

test('a multi-byte character split across chunks is decoded whole', async () => {
  const all = bytes('data: 🙂€\n\n');
  for (let at = 6; at <= 13; at++) {
    assert.deepEqual(await decode([all.slice(0, at), all.slice(at)]), [{ data: '🙂€' }], `split at byte ${at}`);
  }
});

test('reads a web ReadableStream and cancels it when the reader stops early', async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes('data: one\n\ndata: two\n\n'));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const event of readEvents(stream)) {
    assert.deepEqual(event, { data: 'one' });
    break;
  }
  assert.equal(cancelled, true);
});
