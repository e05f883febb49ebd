// The one server-sent-events decoder, following the WHATWG EventSource parsing rules; both wire formats read through it.

/**
 * One dispatched event: its `event:` field when the server sent one, and its `data:` lines joined by "\n".
 * A line with a field the standard does not know (llama.cpp sends `error: {...}` in place of `data:`) is reported
 * at once as its own event with `field` set to that name and `data` to its value, so a wire format can refuse it.
 */
export interface SseEvent {
  event?: string;
  data: string;
  field?: string;
}

/**
 * Yields the events of an SSE body as they complete; an event cut off by the end of the body is dropped, as the
 * standard says. Throws whatever reading the body throws.
 */
export async function* readEvents(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  // fatal: false turns invalid bytes into U+FFFD; stream: true keeps a character split across chunks whole.
  const decoder = new TextDecoder('utf-8');
  const parser = new EventParser();
  for await (const chunk of chunks(body)) {
    yield* parser.push(decoder.decode(chunk, { stream: true }));
  }
  yield* parser.push(decoder.decode());
}

class EventParser {
  private buffer = '';
  // A CR ending one chunk may be the first half of a CRLF ending in the next.
  private skipLeadingLf = false;
  private data: string[] = [];
  private event: string | undefined;

  *push(text: string): Generator<SseEvent> {
    if (this.skipLeadingLf && text.startsWith('\n')) text = text.slice(1);
    if (text.length > 0) this.skipLeadingLf = false;
    this.buffer += text;
    const lineEnd = /\r\n|\r|\n/g;
    let start = 0;
    for (let match = lineEnd.exec(this.buffer); match; match = lineEnd.exec(this.buffer)) {
      // A CR at the very end may still be followed by LF; treat it as a line end and drop that LF when it comes.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) this.skipLeadingLf = true;
      const event = this.line(this.buffer.slice(start, match.index));
      if (event) yield event;
      start = lineEnd.lastIndex;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    // `id` and `retry` steer reconnection, which a single model call never does.
    else if (field !== 'id' && field !== 'retry') return { field, data: value };
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const data = this.data;
    const event = this.event;
    this.data = [];
    this.event = undefined;
    if (data.length === 0) return undefined;
    return event ? { event, data: data.join('\n') } : { data: data.join('\n') };
  }
}

async function* chunks(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (!('getReader' in body)) {
    yield* body;
    return;
  }
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield value;
    }
    finished = true;
  } finally {
    // A consumer that stops early (or a failed read) must not leave the connection open.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
