// The web console's files: read once at start-up into memory, compressed ahead of time, answered with caching and
// security headers. Nothing here touches the file system after start-up, so no request path can reach another file.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { Middleware } from './chain.ts';
import type { Context, Reply } from './context.ts';

/** The extensions served and their content types; any other file in the folder (`.d.ts`, dotfiles) is left out. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml; charset=utf-8',
  '.ico': 'image/x-icon',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
};

const COMPRESSIBLE = new Set(['.html', '.css', '.js', '.svg', '.webmanifest']);

/**
 * Sent with every console file. Scripts and styles come from this origin only (no inline script or style
 * attribute), the API is the only thing fetched, and no other site may frame the console.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; " +
    "manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

/**
 * Files change only with a deploy, and their names carry no fingerprint (no bundler): the browser keeps a copy but
 * asks every time, and an unchanged file costs a 304.
 */
const CACHE_CONTROL = 'no-cache';

type Encoding = 'br' | 'gzip';

interface Representation {
  bytes: Buffer;
  etag: string;
}

interface ConsoleFile {
  contentType: string;
  identity: Representation;
  /** Present when compressing made the file smaller. */
  encoded: Partial<Record<Encoding, Representation>>;
}

/** The console's files by URL path (`/index.html`, `/js/main.js`), built once. */
export type ConsoleFiles = ReadonlyMap<string, ConsoleFile>;

const loaded = new Map<string, ConsoleFiles>();

/** Returns the files under `root` by URL path, each with its compressed forms; read and compressed once per process. */
export function loadConsoleFiles(root: string): ConsoleFiles {
  let files = loaded.get(root);
  if (!files) {
    files = readFolder(root);
    loaded.set(root, files);
  }
  return files;
}

function readFolder(root: string): ConsoleFiles {
  const files = new Map<string, ConsoleFile>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const extension = extname(entry.name);
    const contentType = CONTENT_TYPES[extension];
    if (!entry.isFile() || !contentType || entry.name.startsWith('.') || entry.name.endsWith('.d.ts')) continue;
    const full = join(entry.parentPath, entry.name);
    const urlPath = `/${relative(root, full).split(sep).join('/')}`;
    const bytes = readFileSync(full);
    const hash = createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
    const encoded: ConsoleFile['encoded'] = {};
    if (COMPRESSIBLE.has(extension)) {
      const br = brotliCompressSync(bytes, {
        params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY, [zlib.BROTLI_PARAM_SIZE_HINT]: bytes.length, [zlib.BROTLI_PARAM_MODE]: zlib.BROTLI_MODE_TEXT },
      });
      const gzip = gzipSync(bytes, { level: zlib.Z_BEST_COMPRESSION });
      if (br.length < bytes.length) encoded.br = { bytes: br, etag: `"${hash}-br"` };
      if (gzip.length < bytes.length) encoded.gzip = { bytes: gzip, etag: `"${hash}-gz"` };
    }
    files.set(urlPath, { contentType, identity: { bytes, etag: `"${hash}"` }, encoded });
  }
  const index = files.get('/index.html');
  if (!index) throw new Error(`The console folder ${root} has no index.html.`);
  files.set('/', index);
  return files;
}

/** A path the console's own router shows (`/customers`, `/campaigns/abc-123`): plain segments, no file extension. */
const CLIENT_ROUTE = /^(?:\/[A-Za-z0-9_-]+)+\/?$/;

/**
 * Returns whether an `Accept` header names `text/html` with a weight above zero, as a browser's navigation does
 * (`text/html,application/xhtml+xml,...`). A wildcard alone does not count: API clients and curl send one.
 */
export function acceptsHtml(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [type = '', ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = params.map((p) => /^q=([0-9.]+)$/.exec(p)?.[1]).find((value) => value !== undefined);
    return type === 'text/html' && (q === undefined || Number(q) > 0);
  });
}

/**
 * Returns middleware answering GET and HEAD of the console: a file by its exact path, or `index.html` for a path
 * of the console's own router (the page then shows that screen) when the request's `Accept` names `text/html`.
 * Paths under `apiPrefixes` and everything else go on to the router, which answers an unknown path with a 404
 * problem document: an API client asking for `/v2/customers` never gets a web page.
 */
export function consoleFiles(files: ConsoleFiles, apiPrefixes: readonly string[]): Middleware<Context> {
  const isApi = (path: string) => apiPrefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || isApi(ctx.path)) return next();
    // The exact path as sent: an encoded dot or slash never matches a name, so it cannot climb out of the folder.
    const exact = files.get(ctx.path);
    const file = exact ?? (CLIENT_ROUTE.test(ctx.path) && acceptsHtml(ctx.req.headers.accept) ? files.get('/index.html') : undefined);
    if (!file) return next();
    ctx.req.resume();
    ctx.reply = replyFor(file, ctx.req.headers);
    // The page for a client route depends on Accept too: a cache must not hand it to an API client.
    if (!exact) ctx.reply.headers.vary = 'Accept-Encoding, Accept';
  };
}

/** Returns the reply for one file: the best encoding the client accepts, or 304 when its copy is current. */
function replyFor(file: ConsoleFile, headers: IncomingHttpHeaders): Reply {
  const encoding = chooseEncoding(headers['accept-encoding'], file.encoded);
  const chosen = encoding ? file.encoded[encoding]! : file.identity;
  const replyHeaders: Record<string, string> = {
    ...CONSOLE_SECURITY_HEADERS,
    'content-type': file.contentType,
    'cache-control': CACHE_CONTROL,
    etag: chosen.etag,
    vary: 'Accept-Encoding',
  };
  if (encoding) replyHeaders['content-encoding'] = encoding;
  if (matchesEtag(headers['if-none-match'], chosen.etag)) {
    delete replyHeaders['content-type'];
    delete replyHeaders['content-encoding'];
    return { status: 304, headers: replyHeaders, body: undefined };
  }
  return { status: 200, headers: replyHeaders, body: undefined, bytes: chosen.bytes };
}

/** Returns the accepted encoding with the highest weight among those available (brotli on a tie), or none. */
export function chooseEncoding(header: string | undefined, available: Partial<Record<Encoding, unknown>>): Encoding | undefined {
  if (!header) return undefined;
  const weights = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((value) => value !== undefined);
    const weight = q === undefined ? 1 : Number(q);
    if (name) weights.set(name.trim(), Number.isFinite(weight) ? weight : 0);
  }
  const weightOf = (encoding: Encoding) => weights.get(encoding) ?? (encoding === 'gzip' ? weights.get('x-gzip') : undefined) ?? weights.get('*') ?? 0;
  let best: Encoding | undefined;
  for (const encoding of ['br', 'gzip'] as const) {
    if (!available[encoding] || weightOf(encoding) <= 0) continue;
    if (!best || weightOf(encoding) > weightOf(best)) best = encoding;
  }
  return best;
}

/** Whether `If-None-Match` names this representation (weak comparison, as RFC 9110 asks for this header). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const candidate = tag.trim().replace(/^W\//, '');
    return candidate === '*' || candidate === etag;
  });
}
