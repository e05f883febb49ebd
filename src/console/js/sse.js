// @ts-check
// Reading a server-sent event stream from a fetch response: `data:` lines gathered into events, comments
// (keep-alives) skipped, each event's data parsed as JSON.

/**
 * Yields the JSON data of each event in the body until it ends. Stops early (and releases the body) when the
 * caller stops iterating or the request's signal aborts the read.
 * @param {ReadableStream<Uint8Array>} body
 * @returns {AsyncGenerator<unknown>}
 */
export async function* readEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  /** @type {string[]} */
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length) yield JSON.parse(data.join('\n'));
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        // comments (`: keep-alive`) and other fields are not used by this stream
      }
    }
    if (data.length) yield JSON.parse(data.join('\n'));
  } finally {
    reader.cancel().catch(() => {});
  }
}
