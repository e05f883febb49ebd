// Schemas of chat threads, messages, their requests and the frames of a streamed reply.
import * as v from 'valibot';
import { MESSAGE_ROLES } from '../domain/chat.ts';
import { Counter, MAX_COUNTER, nonBlankPattern, Timestamp, TrimmedText } from './common.ts';

/** Longest message a user may send, after trimming. */
export const MAX_MESSAGE_LENGTH = 8000;

export const ThreadInput = v.object({
  title: v.optional(v.pipe(TrimmedText(1, 120), v.description('Defaults to "New conversation"; the first message then renames the thread.'))),
});

/** A message may run over several lines: line breaks and tabs are allowed, other control characters are not. */
export const MessageInput = v.object({
  content: v.pipe(
    v.string('Must be a string.'),
    v.trim(),
    v.minLength(1, 'Must not be empty.'),
    v.maxLength(MAX_MESSAGE_LENGTH, `Must be at most ${MAX_MESSAGE_LENGTH} characters long.`),
    v.regex(/^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/, 'Must not contain control characters other than line breaks and tabs.'),
    nonBlankPattern('\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f'),
    v.description(`The question: trimmed, 1 to ${MAX_MESSAGE_LENGTH} characters, line breaks and tabs allowed.`),
  ),
});

const positive = (max: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.integer('Must be a whole number.'), v.minValue(1, 'Must be at least 1.'), v.maxValue(max, `Must be at most ${max}.`)), fallback);

export const ThreadListQuery = v.object({
  page: positive(MAX_COUNTER, 1),
  limit: positive(200, 50),
});

export const Thread = v.strictObject({
  id: v.string(),
  title: v.pipe(v.string(), v.minLength(1)),
  messageCount: Counter,
  createdAt: Timestamp,
  updatedAt: v.pipe(Timestamp, v.description('Moves with every stored message.')),
});

export const ThreadPage = v.object({
  items: v.array(Thread),
  total: Counter,
  page: v.pipe(v.number(), v.integer(), v.minValue(1)),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
});

export const Message = v.strictObject({
  id: v.string(),
  threadId: v.string(),
  role: v.picklist(MESSAGE_ROLES),
  content: v.string(),
  model: v.optional(v.pipe(v.string(), v.description('Assistant messages only: which generator wrote it, `local` or the provider\'s model name.'))),
  truncated: v.optional(
    v.pipe(v.literal(true), v.description('Present only on an assistant reply the model had to stop at its token budget (LLM_MAX_TOKENS): the text is cut.')),
  ),
  createdAt: Timestamp,
});

export const MessageList = v.array(Message);

export const SendReply = v.object({ userMessage: Message, assistantMessage: Message });

export const StreamStart = v.pipe(
  v.object({ type: v.literal('start'), threadId: v.string(), userMessageId: v.string() }),
  v.description('First: the user message is stored.'),
);

export const StreamDelta = v.pipe(
  v.object({ type: v.literal('delta'), text: v.string() }),
  v.description('A piece of the reply; the pieces joined are the reply.'),
);

export const StreamDone = v.pipe(
  v.object({
    type: v.literal('done'),
    assistantMessage: Message,
    truncated: v.optional(v.pipe(v.literal(true), v.description('Present only when the reply was cut at the token budget, as on the message.'))),
  }),
  v.description('Last on success: the stored assistant message.'),
);

export const StreamError = v.pipe(
  v.object({
    type: v.literal('error'),
    code: v.picklist(['llm_unavailable', 'llm_error', 'not_found', 'internal_error']),
    message: v.string(),
  }),
  v.description('Last on failure: no assistant message is stored. `not_found` when the thread was deleted meanwhile.'),
);

/** One `data:` frame of `chat.messages.stream`. */
export const StreamEvent = v.pipe(
  v.variant('type', [StreamStart, StreamDelta, StreamDone, StreamError]),
  v.description('One `data:` line of the reply stream: `start`, then `delta` pieces, then `done` or a last `error`.'),
);
