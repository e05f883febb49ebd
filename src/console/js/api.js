// @ts-check
// Talking to the service: JSON in and out, problem documents turned into ApiError, the access token attached, and
// one retry after a 401 once the session has renewed the token.

/** @typedef {import('./types.js').Problem} Problem */
/** @typedef {import('./types.js').FieldError} FieldError */

/** A failed call: a problem document from the service, or `network_error` / `bad_response` from the transport. */
export class ApiError extends Error {
  /**
   * @param {{ status: number, code: string, detail: string, errors?: FieldError[], traceId?: string, retryAfterSeconds?: number }} problem
   */
  constructor(problem) {
    super(problem.detail);
    this.name = 'ApiError';
    this.status = problem.status;
    this.code = problem.code;
    this.detail = problem.detail;
    /** @type {FieldError[]} */
    this.errors = problem.errors ?? [];
    this.traceId = problem.traceId;
    this.retryAfterSeconds = problem.retryAfterSeconds;
  }
}

/**
 * How requests get and renew the access token; set by the session. `renew` receives the token that was refused and
 * returns a usable one, or throws `session_expired`.
 * @type {{ token(): Promise<string | null>, renew(refused: string | null): Promise<string> }}
 */
let auth = { token: async () => null, renew: async () => Promise.reject(new ApiError({ status: 401, code: 'session_expired', detail: 'Not signed in.' })) };

/** @param {typeof auth} provider */
export function useAuth(provider) {
  auth = provider;
}

/**
 * @typedef {object} RequestOptions
 * @property {unknown} [body] sent as JSON
 * @property {Blob} [file] sent as it is, with its own type
 * @property {Record<string, string | number | undefined>} [query] empty values are left out
 * @property {Record<string, string>} [headers]
 * @property {AbortSignal} [signal]
 * @property {boolean} [anonymous] send no token (sign-in, refresh)
 */

/**
 * Sends a request and returns the `Response` once it is a success; a 401 is retried once with a renewed token.
 * Throws ApiError for any failure, or the signal's reason when aborted.
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<Response>}
 */
export async function send(method, path, options = {}) {
  let token = options.anonymous ? null : await auth.token();
  let response = await attempt(method, path, options, token);
  if (response.status === 401 && !options.anonymous) {
    const problem = await toError(response);
    if (problem.code !== 'unauthenticated') throw problem;
    token = await auth.renew(token);
    response = await attempt(method, path, options, token);
  }
  if (!response.ok) throw await toError(response);
  return response;
}

/**
 * Returns the parsed JSON answer of a request (see `send`).
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<any>}
 */
export async function request(method, path, options = {}) {
  const response = await send(method, path, options);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/**
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} options
 * @param {string | null} token
 */
async function attempt(method, path, options, token) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', ...options.headers };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.file) headers['content-type'] = options.file.type || 'application/octet-stream';
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== '') query.set(name, String(value));
  }
  const url = query.size ? `${path}?${query}` : path;
  try {
    return await fetch(url, {
      method,
      headers,
      body: options.file ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: options.signal,
      cache: 'no-store',
    });
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw new ApiError({ status: 0, code: 'network_error', detail: error instanceof Error ? error.message : String(error) });
  }
}

/**
 * Returns the ApiError for a failed response: its problem document, or `bad_response` for anything else
 * (an HTML page from a proxy, say), which is worth retrying.
 * @param {Response} response
 */
async function toError(response) {
  const retryAfter = Number(response.headers.get('retry-after'));
  const retryAfterSeconds = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined;
  if (/^application\/problem\+json/.test(response.headers.get('content-type') ?? '')) {
    try {
      /** @type {Problem} */
      const problem = await response.json();
      return new ApiError({ ...problem, status: response.status, retryAfterSeconds });
    } catch {
      // fall through: a problem document that is not JSON is no problem document
    }
  }
  return new ApiError({ status: response.status, code: 'bad_response', detail: `The service answered ${response.status} ${response.statusText}.`, retryAfterSeconds });
}

/**
 * Whether an error is the abort of a request the page no longer needs (left the screen, typed on).
 * @param {unknown} error
 */
export function isAbort(error) {
  return error instanceof DOMException && error.name === 'AbortError';
}
