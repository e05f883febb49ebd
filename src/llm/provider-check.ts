// One probe of the configured provider: a request made exactly as the service makes it (streamed, with retries),
// timed from outside through the injected fetch, so a self-hoster sees what their server really does.
import type { Config } from '../config.ts';
import { AppError } from '../domain/errors.ts';
import { createLogger } from '../http/logger.ts';
import { createLanguageModel } from './index.ts';
import type { FinishReason, ModelRequest } from './model.ts';

/** What one probe saw. Times are milliseconds from the start of the call. */
export interface ProbeResult {
  /** Whether any HTTP answer came back at all. */
  reachable: boolean;
  /** The model the server says answered, when it says so. */
  servedBy?: string;
  firstByteMs?: number;
  firstContentMs?: number;
  totalMs: number;
  /** The longest wait between two pieces of the answer, headers included: what LLM_TIMEOUT_MS must exceed. */
  longestSilenceMs: number;
  /** Whether the server answered with an event stream rather than a whole JSON body. */
  streamed?: boolean;
  reasoned: boolean;
  finish?: FinishReason;
  text: string;
  /** The problem detail the service would answer with, when the call failed. */
  error?: string;
}

/** Makes the request through the configured provider and returns what happened; never throws for a provider failure. */
export async function probeProvider(
  llm: Config['llm'],
  request: Omit<ModelRequest, 'signal' | 'local'>,
  fetch: typeof globalThis.fetch = globalThis.fetch,
): Promise<ProbeResult> {
  const started = performance.now();
  const since = () => Math.round(performance.now() - started);
  const result: ProbeResult = { reachable: false, totalMs: 0, longestSilenceMs: 0, reasoned: false, text: '' };
  let last = 0;
  const heard = () => {
    const now = since();
    result.longestSilenceMs = Math.max(result.longestSilenceMs, now - last);
    last = now;
  };

  const timedFetch: typeof globalThis.fetch = async (input, init) => {
    last = since();
    const response = await fetch(input, init);
    heard();
    result.reachable = true;
    result.firstByteMs ??= since();
    result.streamed = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    if (!response.body) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        heard();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  const model = createLanguageModel(llm, { logger: createLogger('silent'), fetch: timedFetch });
  try {
    for await (const part of model.stream({ ...request, signal: new AbortController().signal, local: () => '' })) {
      if (part.type === 'text') {
        result.firstContentMs ??= since();
        result.text += part.text;
      } else if (part.type === 'finish') {
        result.finish = part.finish.reason;
        result.reasoned = part.finish.reasoned;
        if (part.finish.servedBy) result.servedBy = part.finish.servedBy;
      }
    }
  } catch (error) {
    result.error = error instanceof AppError ? error.message : `unexpected failure: ${error instanceof Error ? error.message : String(error)}`;
  }
  result.totalMs = since();
  return result;
}
