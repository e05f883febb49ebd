// A test client for server-sent events: reads frames one at a time from fetch's body as they arrive, comments
// included, and can stop early (abort) like a browser tab being closed.

/** One thing the server sent: an event (its `data` lines joined, parsed as JSON when they are) or a comment line. */
export type SseFrame = { kind: 'event'; data: string; json: any; event?: string } | { kind: 'comment'; text: string };

export interface SseResponse {
  status: number;
  headers: Headers;
  /** The whole body parsed as JSON when the answer is not an event stream (a problem document). */
  body: any;
  /** The next frame, or undefined once the stream has ended. */
  next(): Promise<SseFrame | undefined>;
  /** The next event's JSON, skipping comments; undefined once the stream has ended. */
  nextEvent(): Promise<any>;
  /** Every remaining event's JSON, until the server ends the stream. */
  rest(): Promise<any[]>;
  /** Closes the connection from the client's side. */
  abort(): void;
}

export interface SseRequest {
  method?: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Sends the request and returns once the response headers have arrived. */
export async function openSse(url: string, { method = 'POST', token, body, headers = {} }: SseRequest = {}): Promise<SseResponse> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method,
    signal: controller.signal,
    headers: {
      accept: 'text/event-stream',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  let parsedBody: unknown;
  if (!isStream) {
    const text = await response.text();
    try {
      parsedBody = JSON.parse(text);
    } catch {
      parsedBody = text;
    }
  }

  const reader = isStream ? response.body!.getReader() : undefined;
  const decoder = new TextDecoder();
  const ready: SseFrame[] = [];
  let buffer = '';
  let data: string[] = [];
  let event: string | undefined;
  let ended = !isStream;

  const takeLines = () => {
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length) {
          const text = data.join('\n');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          ready.push({ kind: 'event', data: text, json, ...(event ? { event } : {}) });
        }
        data = [];
        event = undefined;
      } else if (line.startsWith(':')) {
        ready.push({ kind: 'comment', text: line.slice(1).trim() });
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        if (field === 'event') event = value;
      }
    }
  };

  const next = async (): Promise<SseFrame | undefined> => {
    while (ready.length === 0 && !ended) {
      const chunk = await reader!.read();
      if (chunk.done) {
        ended = true;
        break;
      }
      buffer += decoder.decode(chunk.value, { stream: true });
      takeLines();
    }
    return ready.shift();
  };

  const nextEvent = async (): Promise<any> => {
    for (let frame = await next(); frame; frame = await next()) if (frame.kind === 'event') return frame.json;
    return undefined;
  };

  return {
    status: response.status,
    headers: response.headers,
    body: parsedBody,
    next,
    nextEvent,
    async rest() {
      const events: unknown[] = [];
      for (let e = await nextEvent(); e !== undefined; e = await nextEvent()) events.push(e);
      return events;
    },
    abort() {
      ended = true;
      controller.abort();
    },
  };
}
