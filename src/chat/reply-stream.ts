// Streaming one assistant reply as server-sent events: `start`, `delta`s, then `done` or `error`.
import type { ChatMessage } from '../db/chat.ts';
import { AppError } from '../domain/errors.ts';
import type { Context } from '../http/context.ts';
import { openEventStream } from '../http/event-stream.ts';
import type { Logger } from '../http/logger.ts';
import type { Finish, LanguageModel, ModelRequest } from '../llm/model.ts';

/** Codes an `error` frame may carry: what the model layer throws, a thread deleted meanwhile, or our own failure. */
const FRAME_CODES = new Set(['llm_unavailable', 'llm_error', 'not_found']);

export interface ReplyStream {
  ctx: Context;
  model: LanguageModel;
  request: ModelRequest;
  heartbeatMs: number;
  logger: Logger;
  threadId: string;
  userMessageId: string;
  /**
   * Checks and stores the whole reply; returns the stored assistant message, whose content may add words after the
   * text (a refusal without any), or throws (`llm_error`, `not_found`).
   */
  store(text: string, finish: Finish): ChatMessage;
}

/**
 * Answers the request with the reply as a stream: headers at once, each model piece as a `delta` as soon as the
 * client has room for it (the model is not read while the client is not reading), and the stored message in
 * `done`. On failure the last frame is `error` and nothing is stored. When the client leaves, the model call is
 * aborted through `ctx.signal` and nothing more is written or stored. Never throws.
 */
export async function streamReply({ ctx, model, request, heartbeatMs, logger, threadId, userMessageId, store }: ReplyStream): Promise<void> {
  const events = openEventStream(ctx, heartbeatMs);
  try {
    if (!(await events.send({ type: 'start', threadId, userMessageId }))) return;
    let reply = '';
    let finish: Finish | undefined;
    for await (const part of model.stream(request)) {
      if (part.type === 'finish') {
        finish = part.finish;
        continue;
      }
      if (part.type === 'tool-call') continue; // chat offers the model no tools yet
      reply += part.text;
      // Awaiting the send is the back-pressure: the next piece is read only once this one is written.
      if (!(await events.send({ type: 'delta', text: part.text }))) return;
    }
    if (ctx.signal.aborted || !finish) return;
    const assistantMessage = store(reply, finish);
    // The deltas joined equal the stored content, also when storing added words.
    const added = assistantMessage.content.slice(reply.length);
    if (added && !(await events.send({ type: 'delta', text: added }))) return;
    await events.send({ type: 'done', assistantMessage, ...(assistantMessage.truncated ? { truncated: true } : {}) });
  } catch (error) {
    if (ctx.signal.aborted) return; // the client left or the service is stopping: nobody to tell
    const known = error instanceof AppError && FRAME_CODES.has(error.code);
    if (!known) logger.error('chat stream failed', { traceId: ctx.traceId, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    await events.send({
      type: 'error',
      code: known ? error.code : 'internal_error',
      message: known ? error.message : 'The server failed while writing the reply.',
    });
  } finally {
    events.close();
  }
}
