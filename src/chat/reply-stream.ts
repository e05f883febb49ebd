// Streaming one assistant turn as server-sent events: `start`, `delta`s and `action`s, then `done` or `error`.
import type { ChatMessage, NewAction } from '../db/chat.ts';
import { AppError } from '../domain/errors.ts';
import type { Context } from '../http/context.ts';
import { openEventStream } from '../http/event-stream.ts';
import type { Logger } from '../http/logger.ts';
import type { TurnOutput, TurnResult } from './tool-loop.ts';

/** Codes an `error` frame may carry: what the model layer throws, a thread deleted meanwhile, or our own failure. */
const FRAME_CODES = new Set(['llm_unavailable', 'llm_error', 'not_found']);

export interface ReplyStream {
  ctx: Context;
  heartbeatMs: number;
  logger: Logger;
  threadId: string;
  userMessageId: string;
  /** Runs the turn, sending its output as it comes; undefined when the turn stopped because nobody listens. */
  turn(out: TurnOutput): Promise<TurnResult | undefined>;
  /**
   * Checks and stores the whole turn; resolves to the stored assistant message, whose content may add words after
   * the text (a refusal without any), or rejects (`llm_error`, `not_found`).
   */
  store(result: TurnResult): Promise<ChatMessage>;
}

/** The frame of a proposal, as it is stored: waiting for the user. */
export const actionFrame = (action: NewAction) => ({ type: 'action', action: { ...action, status: 'proposed' } });

/**
 * Answers with the turn as a stream: headers at once, each model piece as a `delta` as soon as the client has room
 * for it (the model is not read while the client is not reading), each proposal as an `action` frame, and the
 * stored message in `done`. On failure the last frame is `error` and nothing is stored. When the client leaves, the
 * model call is aborted through `ctx.signal` and nothing more is written or stored. Never throws.
 */
export async function streamReply({ ctx, heartbeatMs, logger, threadId, userMessageId, turn, store }: ReplyStream): Promise<void> {
  const events = openEventStream(ctx, heartbeatMs);
  try {
    if (!(await events.send({ type: 'start', threadId, userMessageId }))) return;
    // Awaiting each send is the back-pressure: the next piece is read only once this one is written.
    const result = await turn({
      text: (piece) => events.send({ type: 'delta', text: piece }),
      proposal: (action) => events.send(actionFrame(action)),
    });
    if (ctx.signal.aborted || !result) return;
    const assistantMessage = await store(result);
    // The deltas joined equal the stored content, also when storing added words.
    const added = assistantMessage.content.slice(result.text.length);
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
