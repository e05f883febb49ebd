// The web console's files: content types, caching, compression, security headers, and that no request path
// reaches anything but the files loaded at start-up; the API around them is unchanged.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { CHANNEL_LIMITS as SERVICE_LIMITS } from '../src/domain/campaigns.ts';
import { chooseEncoding } from '../src/http/static-files.ts';
import { CHANNEL_LIMITS as CONSOLE_LIMITS } from '../src/console/js/limits.js';
import { assertProblem, startService, type TestService } from './helpers.ts';

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A request with exactly these headers and the path sent as written (fetch would normalise it and decompress). */
function raw(service: TestService, method: string, path: string, headers: Record<string, string> = {}): Promise<RawReply> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const onDisk = (path: string) => readFileSync(new URL(`../src/console${path}`, import.meta.url));

/** What a browser sends when it navigates to a page (Chromium's and Firefox's default). */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('console files', () => {
  let service: TestService;
  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test('/ is index.html as HTML', async () => {
    const reply = await raw(service, 'GET', '/');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'text/html; charset=utf-8');
    assert.deepEqual(reply.body, onDisk('/index.html'));
    assert.equal(reply.headers['content-length'], String(reply.body.length));
  });

  test('each kind of file has its content type', async () => {
    const expected: Record<string, string> = {
      '/index.html': 'text/html; charset=utf-8',
      '/app.css': 'text/css; charset=utf-8',
      '/js/main.js': 'text/javascript; charset=utf-8',
      '/js/screens/customers.js': 'text/javascript; charset=utf-8',
      '/favicon.svg': 'image/svg+xml; charset=utf-8',
    };
    for (const [path, type] of Object.entries(expected)) {
      const reply = await raw(service, 'GET', path);
      assert.equal(reply.status, 200, path);
      assert.equal(reply.headers['content-type'], type, path);
      assert.deepEqual(reply.body, onDisk(path), path);
    }
  });

  test('every file carries the security headers: a strict CSP, nosniff, a referrer policy, no framing', async () => {
    for (const path of ['/', '/app.css', '/js/main.js', '/customers']) {
      const reply = await raw(service, 'GET', path, { accept: BROWSER_ACCEPT });
      const csp = String(reply.headers['content-security-policy']);
      assert.match(csp, /(^|; )default-src 'none'(;|$)/, path);
      assert.match(csp, /(^|; )script-src 'self'(;|$)/, path);
      assert.match(csp, /(^|; )style-src 'self'(;|$)/, path);
      assert.match(csp, /(^|; )connect-src 'self'(;|$)/, path);
      assert.match(csp, /(^|; )frame-ancestors 'none'(;|$)/, path);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/, path);
      assert.equal(reply.headers['x-content-type-options'], 'nosniff', path);
      assert.equal(reply.headers['referrer-policy'], 'no-referrer', path);
      assert.equal(reply.headers['x-frame-options'], 'DENY', path);
    }
  });

  test('index.html has no inline script or style and loads only its own files', () => {
    const html = onDisk('/index.html').toString('utf8');
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/i, 'every script has a src');
    assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i);
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//i);
  });

  test('a file has an ETag and Cache-Control, and a matching If-None-Match is 304 without a body', async () => {
    const first = await raw(service, 'GET', '/app.css');
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);
    assert.equal(first.headers['cache-control'], 'no-cache');
    const again = await raw(service, 'GET', '/app.css', { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    assert.equal(again.headers.etag, etag);
    assert.equal(again.headers['cache-control'], 'no-cache');
    const listed = await raw(service, 'GET', '/app.css', { 'if-none-match': `"other", W/${etag}` });
    assert.equal(listed.status, 304, 'weak comparison, in a list');
    const changed = await raw(service, 'GET', '/app.css', { 'if-none-match': '"something-else"' });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.body, onDisk('/app.css'));
  });

  test('files differ in ETag; the same file keeps its ETag', async () => {
    const css = await raw(service, 'GET', '/app.css');
    const js = await raw(service, 'GET', '/js/main.js');
    const cssAgain = await raw(service, 'GET', '/app.css');
    assert.notEqual(css.headers.etag, js.headers.etag);
    assert.equal(css.headers.etag, cssAgain.headers.etag);
  });

  test('brotli when accepted, gzip otherwise, identity when neither; each with its own ETag and Vary', async () => {
    const plain = onDisk('/js/main.js');
    const br = await raw(service, 'GET', '/js/main.js', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers.vary, 'Accept-Encoding');
    assert.deepEqual(brotliDecompressSync(br.body), plain);
    assert.ok(br.body.length < plain.length);
    assert.equal(br.headers['content-length'], String(br.body.length));

    const gzip = await raw(service, 'GET', '/js/main.js', { 'accept-encoding': 'gzip' });
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gzip.body), plain);

    const identity = await raw(service, 'GET', '/js/main.js');
    assert.equal(identity.headers['content-encoding'], undefined);
    assert.equal(identity.headers.vary, 'Accept-Encoding');
    assert.deepEqual(identity.body, plain);

    assert.equal(new Set([br.headers.etag, gzip.headers.etag, identity.headers.etag]).size, 3);
    const revalidated = await raw(service, 'GET', '/js/main.js', { 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) });
    assert.equal(revalidated.status, 304);
    assert.equal(revalidated.headers.etag, br.headers.etag);
  });

  test('encodings follow their weights: q=0 refuses, a higher q wins, * counts', () => {
    const both = { br: true, gzip: true };
    assert.equal(chooseEncoding('gzip, br', both), 'br');
    assert.equal(chooseEncoding('br;q=0, gzip', both), 'gzip');
    assert.equal(chooseEncoding('br;q=0.5, gzip;q=0.8', both), 'gzip');
    assert.equal(chooseEncoding('*', both), 'br');
    assert.equal(chooseEncoding('*;q=0', both), undefined);
    assert.equal(chooseEncoding('identity', both), undefined);
    assert.equal(chooseEncoding('br', { gzip: true }), undefined);
    assert.equal(chooseEncoding(undefined, both), undefined);
  });

  test('HEAD answers the headers of GET without a body', async () => {
    const get = await raw(service, 'GET', '/app.css', { 'accept-encoding': 'gzip' });
    const head = await raw(service, 'HEAD', '/app.css', { 'accept-encoding': 'gzip' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['content-length'], get.headers['content-length']);
    assert.equal(head.headers.etag, get.headers.etag);
  });

  test("the console's own routes are index.html for a browser, so a reload or a shared link opens that screen", async () => {
    const index = onDisk('/index.html');
    for (const path of ['/customers', '/segments/new', '/campaigns/0b1c2d', '/assistant/abc-123', '/users/']) {
      const reply = await raw(service, 'GET', path, { accept: BROWSER_ACCEPT });
      assert.equal(reply.status, 200, path);
      assert.equal(reply.headers['content-type'], 'text/html; charset=utf-8', path);
      assert.equal(reply.headers.vary, 'Accept-Encoding, Accept', path);
      assert.deepEqual(reply.body, index, path);
    }
    const plain = await raw(service, 'GET', '/customers', { accept: 'text/html' });
    assert.equal(plain.status, 200);
    assert.deepEqual(plain.body, index);
  });

  test('an unknown path outside /v1 is a 404 problem document unless Accept names text/html', async () => {
    for (const path of ['/v2/customers', '/customers', '/api/users/1']) {
      const browser = await raw(service, 'GET', path, { accept: BROWSER_ACCEPT });
      assert.equal(browser.status, 200, path);
      assert.equal(browser.headers['content-type'], 'text/html; charset=utf-8', path);
      const accepts: Record<string, string | undefined> = {
        'application/json': 'application/json',
        '*/*': '*/*',
        'no Accept header': undefined,
        'text/html refused with q=0': 'text/html;q=0, */*',
        'application/problem+json': 'application/problem+json',
      };
      for (const [what, accept] of Object.entries(accepts)) {
        const reply = await service.request('GET', path, accept === undefined ? {} : { headers: { accept } });
        assert.equal(reply.status, 404, `${path} with ${what}`);
        assertProblem(reply, 404, 'not_found');
      }
    }
    // HEAD follows GET.
    assert.equal((await raw(service, 'HEAD', '/v2/customers', { accept: 'application/json' })).status, 404);
    assert.equal((await raw(service, 'HEAD', '/v2/customers', { accept: BROWSER_ACCEPT })).status, 200);
  });

  test('real files are served whatever Accept says', async () => {
    for (const path of ['/', '/index.html', '/app.css', '/js/main.js', '/favicon.svg']) {
      for (const accept of [undefined, '*/*', 'application/json']) {
        const reply = await raw(service, 'GET', path, accept === undefined ? {} : { accept });
        assert.equal(reply.status, 200, `${path} with ${accept}`);
        assert.deepEqual(reply.body, onDisk(path === '/' ? '/index.html' : path), `${path} with ${accept}`);
        assert.equal(reply.headers.vary, 'Accept-Encoding', path);
      }
    }
  });

  test('an unknown file is a 404 problem document, not index.html', async () => {
    for (const path of ['/missing.js', '/js/nothing.css', '/favicon.ico', '/js/types.d.ts', '/app.css.map']) {
      const reply = await service.request('GET', path);
      assertProblem(reply, 404, 'not_found');
    }
  });

  test('no directory traversal: dot segments and encoded or double-encoded slashes reach no file outside the console', async () => {
    const attempts = [
      '/..%2fpackage.json',
      '/..%2f..%2fpackage.json',
      '/%2e%2e%2fpackage.json',
      '/%2e%2e/%2e%2e/package.json',
      '/js/%2e%2e/%2e%2e/%2e%2e/package.json',
      '/%252e%252e%252fpackage.json',
      '/..%252f..%252fpackage.json',
      '/js/..%5c..%5cpackage.json',
      '/..\\..\\package.json',
      '/js/../../schema.sql',
      '/.%2e/.%2e/schema.sql',
      '/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/..%c0%af..%c0%afpackage.json',
    ];
    const secrets = [readFileSync(new URL('../package.json', import.meta.url)), readFileSync(new URL('../schema.sql', import.meta.url))];
    for (const path of attempts) {
      const reply = await raw(service, 'GET', path);
      for (const secret of secrets) assert.ok(!reply.body.includes(secret.subarray(0, 40)), `${path} leaked a file`);
      if (reply.status === 200) {
        // A path the URL parser resolves to a plain route may show the console, and nothing else.
        assert.deepEqual(reply.body, onDisk('/index.html'), path);
      } else {
        assert.ok([400, 404].includes(reply.status), `${path}: ${reply.status}`);
        assert.match(String(reply.headers['content-type']), /^application\/problem\+json/, path);
      }
    }
  });

  test('the API is unchanged: /health, a JSON endpoint, and an unknown /v1 path stays a problem document', async () => {
    const health = await service.request('GET', '/health');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    assert.equal(health.headers.get('content-security-policy'), null);
    const openapi = await service.request('GET', '/v1/openapi.json');
    assert.equal(openapi.status, 200);
    assert.match(openapi.headers.get('content-type') ?? '', /^application\/json/);
    for (const path of ['/v1/nope', '/v1/index.html', '/v1/app.css', '/v1', '/v1/', '/health/index.html']) {
      assertProblem(await service.request('GET', path), 404, 'not_found');
    }
    assertProblem(await service.request('GET', '/v1/customers'), 401, 'unauthenticated');
  });

  test('other methods on console paths are not answered with files', async () => {
    assertProblem(await service.request('POST', '/'), 404, 'not_found');
    assertProblem(await service.request('DELETE', '/app.css'), 404, 'not_found');
  });

  test("the console's channel limits are the service's", () => {
    assert.deepEqual(JSON.parse(JSON.stringify(CONSOLE_LIMITS)), SERVICE_LIMITS);
  });
});

describe('console styles', () => {
  const css = onDisk('/app.css').toString('utf8');
  /** The value of a custom property declared in :root. */
  const variable = (name: string) => {
    const found = new RegExp(`--${name}:\\s*(#[0-9a-f]{6})\\b`, 'i').exec(css);
    assert.ok(found, `--${name} is not a #rrggbb colour in app.css`);
    return found[1]!;
  };
  /** WCAG 2 contrast ratio of two #rrggbb colours. */
  const contrast = (a: string, b: string) => {
    const luminance = (hex: string) => {
      const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (light! + 0.05) / (dark! + 0.05);
  };

  test('the focus ring has at least 3:1 contrast against white and the page background', () => {
    const ring = /:focus-visible\s*\{[^}]*outline:\s*\d+px solid var\(--([\w-]+)\)/.exec(css);
    assert.ok(ring, 'no :focus-visible outline drawn in a colour variable');
    const fields = /input:focus, select:focus, textarea:focus\s*\{[^}]*outline:\s*\d+px solid var\(--([\w-]+)\)/.exec(css);
    assert.ok(fields, 'no focus outline on fields drawn in a colour variable');
    for (const name of [ring[1]!, fields[1]!]) {
      for (const background of ['#ffffff', variable('surface'), variable('page')]) {
        const ratio = contrast(variable(name), background);
        assert.ok(ratio >= 3, `--${name} on ${background}: ${ratio.toFixed(2)}:1`);
      }
    }
  });

  test('no rule breaks words anywhere they meet the edge (word-break: break-all cut "email" in the import help)', () => {
    assert.doesNotMatch(css, /word-break:\s*break-all/);
  });
});
