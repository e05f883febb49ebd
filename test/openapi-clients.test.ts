// The OpenAPI document as generators use it: openapi-typescript turns GET /v1/openapi.json into types, `tsc` checks
// a small client written against them (test/fixtures/openapi-client/client.ts), and the client runs against the service.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { PASSWORD, startService, type TestService } from './helpers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENT = join(ROOT, 'test', 'fixtures', 'openapi-client', 'client.ts');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

type Document = Record<string, any>;

let service: TestService;
let document: Document;
let dir: string;

before(async () => {
  service = await startService();
  const reply = await service.request<Document>('GET', '/v1/openapi.json');
  assert.equal(reply.status, 200, reply.text);
  document = reply.body;
  dir = mkdtempSync(join(tmpdir(), 'campaigns-openapi-client-'));
});
after(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Generates types from `doc` into `folder` and type-checks the client against them; returns tsc's exit code and output. */
async function typeCheckClient(doc: Document, folder: string): Promise<{ code: number; output: string }> {
  const types = join(folder, 'api.d.ts');
  writeFileSync(types, astToString(await openapiTS(structuredClone(doc) as OpenAPI3)));
  const compilerOptions = {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'DOM'],
    types: [],
    skipLibCheck: true,
    paths: { 'generated-openapi-types': [types] },
  };
  writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: [CLIENT] }, null, 2));
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, '-p', join(folder, 'tsconfig.json')], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

/** The schema of one import row, where the document keeps it. */
function importRowSchema(doc: Document): Document {
  return doc.paths['/v1/customers/import'].post.requestBody.content['application/json'].schema.properties.customers.items;
}

test('a client typed by openapi-typescript from the document compiles: import rows, segments, campaigns, stream frames', async () => {
  const current = mkdtempSync(join(dir, 'current-'));
  // The rows as they were described before: an object with no properties, which generates `Record<string, never>`.
  const bare = structuredClone(document);
  const bareRow = importRowSchema(bare);
  bareRow.properties = {};
  delete bareRow.additionalProperties;
  const [checked, regressed] = await Promise.all([typeCheckClient(document, current), typeCheckClient(bare, mkdtempSync(join(dir, 'bare-')))]);

  assert.equal(checked.code, 0, `tsc rejects the client against the generated types:\n${checked.output}`);
  assert.notEqual(regressed.code, 0, 'with rows that have no properties the client must not compile');
  assert.match(regressed.output, /client\.ts\(\d+,\d+\): error TS\d+/);
});

test('the rows schema lists the customer fields, allows others and requires none', () => {
  const row = importRowSchema(document);
  assert.deepEqual(Object.keys(row.properties), ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status']);
  assert.equal(row.additionalProperties, true);
  assert.deepEqual(row.required ?? [], []);
});

test('the stream frames are components that the text/event-stream response refers to', () => {
  const content = document.paths['/v1/chat/threads/{id}/messages/stream'].post.responses['200'].content['text/event-stream'];
  assert.deepEqual(content.schema, { $ref: '#/components/schemas/ChatStreamEvent' });
  const frames = document.components.schemas.ChatStreamEvent.oneOf.map((f: { $ref: string }) => f.$ref.split('/').pop());
  assert.deepEqual(frames, ['ChatStreamStartEvent', 'ChatStreamDeltaEvent', 'ChatStreamActionEvent', 'ChatStreamDoneEvent', 'ChatStreamErrorEvent']);
  assert.equal(document.components.schemas.ChatStreamDoneEvent.properties.truncated.const, true);
});

test('the compiled client runs against the service: signs in, imports, previews, saves a segment and drafts a campaign', async () => {
  const user = await service.createUser('lifecycle_marketer');
  const client = (await import(pathToFileURL(CLIENT).href)) as { run(baseUrl: string, email: string, password: string): Promise<any> };
  const outcome = await client.run(service.url, user.email, PASSWORD);

  assert.equal(outcome.userId, user.id);
  assert.equal(outcome.rows[2], 'Ada Lovelace <ada@example.com>, United Kingdom, active: 12 purchases, 1450.50 spent, last 2026-11-02');
  assert.deepEqual([outcome.imported, outcome.skipped, outcome.matchCount], [3, 0, 2]);
  assert.equal(outcome.campaign.channel, 'sms');
  assert.ok(outcome.campaign.title.length <= 60 && outcome.campaign.message.length <= 320 && outcome.campaign.callToAction.length <= 40);
  assert.equal(outcome.campaign.createdAt.toISOString(), service.clock.now().toISOString());
  const stored = await service.request('GET', '/v1/customers?country=united%20kingdom&sort=name&direction=asc', { token: await service.tokenFor('admin') });
  assert.deepEqual(stored.body.items.map((c: { email: string }) => c.email), ['ada@example.com', 'alan@example.com']);
});
