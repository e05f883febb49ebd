// `npm run provider:check` as a process against the fake provider replaying real servers: the table it prints, the
// settings it suggests, and its exit code (0 only when generation would work). The key is never printed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { startFakeProvider, type FakeProvider, type FakeReply } from './support/fake-provider.ts';

const API_KEY = 'sk-test-0123456789abcdef';

/** Runs the check against the fake with `replies` queued; resolves with its exit code and everything it printed. */
async function check(t: { after(fn: () => Promise<void>): void }, replies: FakeReply[], env: Record<string, string> = {}) {
  const fake: FakeProvider = await startFakeProvider();
  t.after(() => fake.close());
  fake.defaultReply = { status: 500, body: { error: { message: 'unscripted request' } } };
  fake.enqueue(...replies);
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/provider-check.ts'], {
    env: { ...process.env, LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'qwen3:8b', LLM_API_KEY: API_KEY, LLM_MAX_RETRIES: '0', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output, requests: fake.requests };
}

/** The cells of one row of the printed table. */
function row(output: string, label: string): string[] {
  const line = output.split('\n').find((l) => l.startsWith(`${label} `));
  assert.ok(line, `no "${label}" row in:\n${output}`);
  return line.slice(label.length).trim().split(/ {3,}/);
}

test('a working server: both requests streamed, the table filled in, exit code 0', { timeout: 30_000 }, async (t) => {
  const { code, output, requests } = await check(t, [{ transcript: 'openai/stream-plain.http' }, { transcript: 'openai/stream-json.http' }]);
  assert.equal(code, 0, output);
  assert.equal(requests.length, 2);
  assert.ok(requests.every((r) => r.body.stream === true));
  assert.ok(requests[1]!.body.response_format, 'the second request asks for JSON');
  assert.deepEqual(row(output, 'reachable'), ['yes', 'yes']);
  assert.deepEqual(row(output, 'model'), ['gpt-4o-mini-2024-07-18', 'gpt-4o-mini-2024-07-18']);
  assert.deepEqual(row(output, 'streaming'), ['yes', 'yes']);
  assert.deepEqual(row(output, 'reasons'), ['no', 'no']);
  assert.deepEqual(row(output, 'finish'), ['stop', 'stop']);
  assert.deepEqual(row(output, 'json mode'), ['-', 'yes (json_schema)']);
  assert.match(row(output, 'first byte')[0]!, /^\d[\d,]* ms$/);
  assert.match(row(output, 'first content')[1]!, /^\d[\d,]* ms$/);
  assert.doesNotMatch(output, /Suggested settings/);
  assert.match(output, /Generation works with this provider\./);
});

test('a thinking model whose budget is too small: reasons, cut at length, LLM_MAX_TOKENS suggested, exit code 1', { timeout: 30_000 }, async (t) => {
  const thinking = { transcript: 'ollama/stream-reasoning-length.http' };
  const { code, output } = await check(t, [thinking, thinking]);
  assert.equal(code, 1, output);
  assert.deepEqual(row(output, 'reasons'), ['yes', 'yes']);
  assert.deepEqual(row(output, 'finish'), ['length', 'length']);
  assert.deepEqual(row(output, 'first content'), ['-', '-']);
  assert.match(output, /Suggested settings:\n {2}LLM_MAX_TOKENS=8192 {2}\(the reply was cut at 1024 tokens, all of them spent reasoning\)/);
  assert.match(output, /Generation would NOT work with these settings\./);
});

test('a server silent for more than half of LLM_TIMEOUT_MS before it answers: a longer LLM_TIMEOUT_MS is suggested', { timeout: 30_000 }, async (t) => {
  const slow: FakeReply = { transcript: 'openrouter/stream-comments.http', delayMs: 700 };
  const { code, output } = await check(t, [slow, { transcript: 'openai/stream-json.http' }], { LLM_TIMEOUT_MS: '1200' });
  assert.equal(code, 0, output);
  assert.match(output, /LLM_TIMEOUT_MS=\d+ {2}\(the server fell silent for [\d,]+ ms; the default is 1200\)/);
});

test('a wrong key: refused, exit code not 0, the detail says so, and the key is never printed', { timeout: 30_000 }, async (t) => {
  const refused = { transcript: 'openai/error-401.http' };
  const { code, output, requests } = await check(t, [refused, refused]);
  assert.notEqual(code, 0, output);
  assert.equal(requests.length, 2, 'one request each, no retries of a refusal');
  assert.deepEqual(row(output, 'reachable'), ['yes', 'yes']);
  assert.match(output, /the API key was refused; check LLM_API_KEY/);
  assert.equal(output.includes(API_KEY), false);
  assert.equal(output.includes('0123456789abcdef'), false);
});
