// One attempt of a delivery over HTTP: a POST without following redirects, bounded in time and in what it reads.

/** The most of an answer's body read (an excerpt of it explains a failure); the rest is cancelled unread. */
const READ_LIMIT = 4096;
/** The most of that excerpt kept in a delivery's `error`. */
const EXCERPT_CHARS = 200;

export type PostOutcome =
  | { kind: 'answered'; status: number; error: string | undefined }
  | { kind: 'failed'; error: string }
  /** The service is stopping: the attempt does not count. */
  | { kind: 'stopped' };

export interface PostRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * Returns what became of a POST of `request`: the status (with why a non-2xx one fails), or why no answer came within
 * `timeoutMs`. Never throws; `stopping` aborting it gives `stopped`.
 */
export async function postDelivery(fetch: typeof globalThis.fetch, request: PostRequest, timeoutMs: number, stopping: AbortSignal): Promise<PostOutcome> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([timeout, stopping]);
  let response: Response;
  try {
    response = await fetch(request.url, { method: 'POST', headers: request.headers, body: request.body, redirect: 'manual', signal });
  } catch (error) {
    if (stopping.aborted) return { kind: 'stopped' };
    if (timeout.aborted) return { kind: 'failed', error: `No answer within ${timeoutMs / 1000} s.` };
    return { kind: 'failed', error: `Connection failed (${reasonOf(error)}).` };
  }
  const excerpt = await readExcerpt(response);
  const { status } = response;
  if (status >= 200 && status < 300) return { kind: 'answered', status, error: undefined };
  if (status >= 300 && status < 400) {
    const location = response.headers.get('location');
    return { kind: 'answered', status, error: `Redirect not followed${location ? ` (to ${clip(location)})` : ''}: webhooks need the final URL.` };
  }
  return { kind: 'answered', status, error: `The endpoint answered ${status}${excerpt ? `: ${excerpt}` : '.'}` };
}

/** Returns the start of the body as one line of text, having read at most READ_LIMIT bytes and cancelled the rest. */
async function readExcerpt(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let read = 0;
  try {
    while (read < READ_LIMIT) {
      const { done, value } = await reader.read();
      if (done) return clip(Buffer.concat(chunks).toString('utf8'));
      chunks.push(value);
      read += value.length;
    }
    await reader.cancel();
  } catch {
    // A body cut off or timed out: the status already answered.
  }
  return clip(Buffer.concat(chunks).subarray(0, READ_LIMIT).toString('utf8'));
}

/** Returns the text on one line without control characters, at most EXCERPT_CHARS long. */
function clip(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS - 1)}…` : line;
}

/** Returns a short reason for a failed connection, such as `ECONNREFUSED` or `UND_ERR_SOCKET` (closed before the answer). */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return clip(cause.message);
  return error instanceof Error ? clip(error.message) : 'unknown error';
}
