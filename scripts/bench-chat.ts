// Chat stream benchmark: 200 reply streams opened within a second, written by the local generator and by a provider
// sending a piece every 20 ms (so all 200 are open together). Measures the time to the first frame and to the first text, the service's memory with the
// streams open, and how long a /health request waits meanwhile (the event loop's delay as a client feels it).
// Then turns with one read tool through a provider answering at once: the time the service adds to the whole loop
// (one request at a time), and 100 such turns streaming at once.
// Run by `npm run bench`, or alone as `npm run bench:chat -- [--database PATH] [--streams N]`.
import { parseArgs } from 'node:util';
import { startFakeProvider, type FakeProvider, type RecordedRequest } from '../test/support/fake-provider.ts';
import { audienceReady, ensureUserAt, freshCopy, log, percentile, rssMb, SERVICE, signIn, sleep, startProcess, waitFor } from './bench-support.ts';

const ACCOUNT = { email: 'chat-bench@example.com', fullName: 'Chat bench', role: 'marketing_lead', password: 'bench-password-1' } as const;
const PIECES = 150;
const PIECE_INTERVAL_MS = 20;
/** Streams are opened one every this many milliseconds (200 within a second), not all in the same instant. */
const RAMP_MS = 5;

export interface StreamRun {
  name: string;
  streams: number;
  /** Milliseconds from sending the request to the `start` frame, and to the first `delta`. */
  firstFrame: { p50: number; p99: number };
  firstText: { p50: number; p99: number };
  /** The provider's own delay before its first piece (0 for the local generator). */
  providerFirstPieceMs: number;
  complete: number;
  /** The most streams open at the same time. */
  peakOpen: number;
  rssBeforeMb: number;
  rssOpenMb: number;
  healthP99Ms: number;
}

export interface ToolTurnRun {
  /** One turn at a time, whole (`POST .../messages`): the service's time, the provider's own for its two answers, and the difference. */
  serviceP50: number;
  serviceP99: number;
  providerP50: number;
  addedP50: number;
  turns: number;
  /** That many turns streaming at once. */
  concurrent: { streams: number; firstFrame: { p50: number; p99: number }; complete: number; rssBeforeMb: number; rssPeakMb: number };
}

/** The read tool every bench turn calls: a count the audience index answers (remembered after the first). */
const TOOL_ARGUMENTS = JSON.stringify({ conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }, { field: 'totalTransactions', operator: 'gte', value: 3 }] });

/** The provider's script for a turn with one tool: a count_audience call, then, once its result is back, a sentence. */
function oneToolTurn(request: RecordedRequest) {
  const messages = (request.body?.messages ?? []) as { role: string }[];
  if (messages.at(-1)?.role === 'tool') return { text: 'That many customers in Germany bought at least three times.' };
  return { toolCalls: [{ id: `call_${request.startedAt}_${messages.length}`, name: 'count_audience', arguments: TOOL_ARGUMENTS }], splitArguments: 3 };
}

const sortedNumbers = (values: number[]) => values.filter(Number.isFinite).sort((a, b) => a - b);

/** Times turns with one read tool against a service whose provider is `fake`. */
async function toolTurns(base: string, pid: number, fake: FakeProvider, turns: number, concurrent: number): Promise<ToolTurnRun> {
  const token = await signIn(base, ACCOUNT.email, ACCOUNT.password);
  await audienceReady(base, token);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const newThread = async () => ((await (await fetch(`${base}/v1/chat/threads`, { method: 'POST', headers, body: '{}' })).json()) as { id: string }).id;
  fake.respond = oneToolTurn;
  try {
    const service: number[] = [];
    for (let i = 0; i < turns; i++) {
      const thread = await newThread();
      const begun = performance.now();
      const reply = await fetch(`${base}/v1/chat/threads/${thread}/messages`, { method: 'POST', headers, body: JSON.stringify({ content: 'How many German customers bought three times or more?' }) });
      if (reply.status !== 200) throw new Error(`a tool turn failed: ${reply.status} ${await reply.text()}`);
      await reply.text();
      service.push(performance.now() - begun);
    }
    // The provider's own time for the turn's two answers, asked directly the same way.
    const [askTool, askText] = fake.requests.slice(-2).map((r) => JSON.stringify(r.body));
    const provider: number[] = [];
    for (let i = 0; i < turns; i++) {
      const begun = performance.now();
      for (const body of [askTool, askText]) await (await fetch(`${fake.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
      provider.push(performance.now() - begun);
    }
    const servicePs = sortedNumbers(service);
    const providerP50 = percentile(sortedNumbers(provider), 0.5);

    const threads = await Promise.all(Array.from({ length: concurrent }, newThread));
    const rssBeforeMb = rssMb(pid);
    let rssPeakMb = rssBeforeMb;
    let running = true;
    const sampler = (async () => {
      while (running) {
        rssPeakMb = Math.max(rssPeakMb, rssMb(pid));
        await sleep(20);
      }
    })();
    const timings = await Promise.all(threads.map((id) => timeStream(`${base}/v1/chat/threads/${id}/messages/stream`, token, 'How many German customers bought three times or more?')));
    running = false;
    await sampler;
    const frames = sortedNumbers(timings.map((t) => t.firstFrame));
    const result: ToolTurnRun = {
      serviceP50: percentile(servicePs, 0.5),
      serviceP99: percentile(servicePs, 0.99),
      providerP50,
      addedP50: percentile(servicePs, 0.5) - providerP50,
      turns,
      concurrent: {
        streams: concurrent,
        firstFrame: { p50: percentile(frames, 0.5), p99: percentile(frames, 0.99) },
        complete: timings.filter((t) => t.ok).length,
        rssBeforeMb,
        rssPeakMb,
      },
    };
    log(
      `  one read tool, one turn at a time: service p50 ${result.serviceP50.toFixed(2)} ms, provider p50 ${providerP50.toFixed(2)} ms (two answers), added p50 ${result.addedP50.toFixed(2)} ms`,
    );
    log(
      `  ${concurrent} such turns streaming at once: first frame p50 ${result.concurrent.firstFrame.p50.toFixed(1)} / p99 ${result.concurrent.firstFrame.p99.toFixed(1)} ms, ` +
        `${result.concurrent.complete}/${concurrent} complete, RSS ${Math.round(rssBeforeMb)} -> ${Math.round(rssPeakMb)} MB`,
    );
    return result;
  } finally {
    fake.respond = undefined;
  }
}

interface StreamTiming {
  firstFrame: number;
  firstText: number;
  ok: boolean;
}

/** Opens one stream and reads it to the end, noting when the first frame and the first text arrived. */
async function timeStream(url: string, token: string, content: string): Promise<StreamTiming> {
  const begun = performance.now();
  const reply = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ content }) });
  if (!reply.body || !(reply.headers.get('content-type') ?? '').startsWith('text/event-stream')) throw new Error(`stream refused: ${reply.status} ${await reply.text()}`);
  let firstFrame = NaN;
  let firstText = NaN;
  let ok = false;
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of reply.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    const frames = buffer.split('\n\n');
    buffer = frames.pop() ?? '';
    for (const frame of frames) {
      if (!frame.startsWith('data: ')) continue;
      const event = JSON.parse(frame.slice(6)) as { type: string };
      if (Number.isNaN(firstFrame)) firstFrame = performance.now() - begun;
      if (event.type === 'delta' && Number.isNaN(firstText)) firstText = performance.now() - begun;
      if (event.type === 'done') ok = true;
    }
  }
  return { firstFrame, firstText, ok };
}

async function run(name: string, base: string, pid: number, streams: number, providerFirstPieceMs: number): Promise<StreamRun> {
  const token = await signIn(base, ACCOUNT.email, ACCOUNT.password);
  await audienceReady(base, token);
  const threads: string[] = [];
  for (let i = 0; i < streams; i++) {
    const reply = await fetch(`${base}/v1/chat/threads`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
    threads.push(((await reply.json()) as { id: string }).id);
  }
  const rssBeforeMb = rssMb(pid);
  let rssOpenMb = rssBeforeMb;
  const health: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const begun = performance.now();
      await (await fetch(`${base}/health`)).text();
      health.push(performance.now() - begun);
      rssOpenMb = Math.max(rssOpenMb, rssMb(pid));
      await sleep(20);
    }
  })();
  let open = 0;
  let peakOpen = 0;
  const timings = await Promise.all(
    threads.map(async (id, i) => {
      await sleep(i * RAMP_MS);
      peakOpen = Math.max(peakOpen, ++open);
      try {
        return await timeStream(`${base}/v1/chat/threads/${id}/messages/stream`, token, 'How healthy is our customer base, and which segment should we target?');
      } finally {
        open--;
      }
    }),
  );
  running = false;
  await probe;
  const sorted = (pick: (t: StreamTiming) => number) => timings.map(pick).filter(Number.isFinite).sort((a, b) => a - b);
  const frames = sorted((t) => t.firstFrame);
  const texts = sorted((t) => t.firstText);
  const result: StreamRun = {
    name,
    streams,
    firstFrame: { p50: percentile(frames, 0.5), p99: percentile(frames, 0.99) },
    firstText: { p50: percentile(texts, 0.5), p99: percentile(texts, 0.99) },
    providerFirstPieceMs,
    complete: timings.filter((t) => t.ok).length,
    peakOpen,
    rssBeforeMb,
    rssOpenMb,
    healthP99Ms: percentile(health.sort((a, b) => a - b), 0.99),
  };
  log(
    `  ${name.padEnd(40)} first frame p50 ${result.firstFrame.p50.toFixed(1)} / p99 ${result.firstFrame.p99.toFixed(1)} ms, first text p50 ` +
      `${result.firstText.p50.toFixed(1)} / p99 ${result.firstText.p99.toFixed(1)} ms, ${result.complete}/${streams} complete (${peakOpen} open at once), RSS ` +
      `${Math.round(rssBeforeMb)} -> ${Math.round(rssOpenMb)} MB, /health p99 ${result.healthP99Ms.toFixed(1)} ms`,
  );
  return result;
}

export interface ChatFigures {
  streams: StreamRun[];
  tools: ToolTurnRun;
}

/** Runs both stream benchmarks and the tool turns against services on `database` (a user is added) and returns their figures. */
export async function benchChat({ database, streams = 200, port = 3937 }: { database: string; streams?: number; port?: number }): Promise<ChatFigures> {
  await ensureUserAt(database, ACCOUNT);
  const common = {
    DATABASE_PATH: database,
    LOG_LEVEL: 'info',
    ADMIN_PASSWORD: 'unused-admin-password',
    MODEL_CALLS_PER_MINUTE: '100000',
    CHAT_STREAMS_PER_USER: String(streams),
    CHAT_STREAMS_TOTAL: String(streams),
  };
  const fake = await startFakeProvider();
  fake.defaultReply = { pieces: Array.from({ length: PIECES }, (_, i) => `piece ${i} `), intervalMs: PIECE_INTERVAL_MS };
  const results: StreamRun[] = [];
  let tools: ToolTurnRun | undefined;
  log(`Chat, ${streams} streams at once:`);
  for (const [name, env, providerFirstPieceMs] of [
    ['local generator', { LLM_PROVIDER: 'local' }, 0],
    [`provider, a piece every ${PIECE_INTERVAL_MS} ms`, { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'bench-model' }, 0],
  ] as const) {
    const service = startProcess(SERVICE, { ...common, ...env, PORT: String(port) }, `data/bench-chat-${env.LLM_PROVIDER}.log`);
    try {
      await waitFor(`http://127.0.0.1:${port}/health`);
      results.push(await run(name, `http://127.0.0.1:${port}`, service.pid!, streams, providerFirstPieceMs));
      if (env.LLM_PROVIDER === 'openai') tools = await toolTurns(`http://127.0.0.1:${port}`, service.pid!, fake, 300, 100);
    } finally {
      service.kill('SIGTERM');
      await new Promise((resolve) => service.once('exit', resolve));
    }
  }
  await fake.close();
  return { streams: results, tools: tools! };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { database: { type: 'string', default: 'data/bench-1000000.db' }, streams: { type: 'string', default: '200' } } });
  const copy = 'data/bench-chat.db';
  freshCopy(values.database, copy);
  process.stdout.write(`${JSON.stringify(await benchChat({ database: copy, streams: Number(values.streams) }), null, 2)}\n`);
}
