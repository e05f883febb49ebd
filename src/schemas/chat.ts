// Schemas of chat threads, messages, their requests and the frames of a streamed reply.
import * as v from 'valibot';
import { ACTION_KINDS, ACTION_STATUSES, MESSAGE_ROLES } from '../domain/chat.ts';
import { Campaign, GenerateRequest } from './campaigns.ts';
import { Segment, SegmentRequest } from './segments.ts';
import { Counter, MAX_COUNTER, nonBlankPattern, Page, PositiveParam, Timestamp, TrimmedText } from './common.ts';

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

export const ThreadListQuery = v.object({
  page: PositiveParam(MAX_COUNTER, 1),
  limit: PositiveParam(200, 50),
});

export const Thread = v.strictObject({
  id: v.string(),
  title: v.pipe(v.string(), v.minLength(1)),
  messageCount: Counter,
  createdAt: Timestamp,
  updatedAt: v.pipe(Timestamp, v.description('Moves with every stored message.')),
});

export const ThreadPage = Page(Thread);

/** A proposal of the assistant: the input is the body of the operation a confirm runs. */
export const ChatAction = v.pipe(
  v.strictObject({
    id: v.string(),
    kind: v.pipe(v.picklist(ACTION_KINDS), v.description('`save_segment` runs segments.create, `draft_campaign` runs campaigns.generate.')),
    input: v.pipe(v.union([SegmentRequest, GenerateRequest]), v.description('The body of the operation a confirm runs, as validated when proposed.')),
    summary: v.pipe(v.string(), v.description('One line for the user: "Save segment “Lapsed in Germany” — 1,240 customers (...)".')),
    status: v.pipe(v.picklist(ACTION_STATUSES), v.description('`proposed` until the user confirms or rejects it.')),
    resultId: v.optional(v.pipe(v.string(), v.description('Once confirmed: the id of the segment or campaign it made.'))),
  }),
  v.description('What the assistant proposed; only the thread\'s owner can run it, by confirming.'),
);

export const ActionParams = v.object({ id: v.pipe(v.string(), v.minLength(1)), actionId: v.pipe(v.string(), v.minLength(1)) });

export const ConfirmReply = v.object({
  action: ChatAction,
  result: v.pipe(v.union([Segment, Campaign]), v.description('What the operation answered: the saved segment or the drafted campaign, the same on every confirm.')),
});

export const RejectReply = v.object({ action: ChatAction });

export const Message = v.strictObject({
  id: v.string(),
  threadId: v.string(),
  role: v.picklist(MESSAGE_ROLES),
  content: v.string(),
  model: v.optional(v.pipe(v.string(), v.description('Assistant messages only: which generator wrote it, `local` or the provider\'s model name.'))),
  truncated: v.optional(
    v.pipe(v.literal(true), v.description('Present only on an assistant reply the model had to stop at its token budget (LLM_MAX_TOKENS): the text is cut.')),
  ),
  actions: v.optional(
    v.pipe(v.array(ChatAction), v.description('Assistant messages that proposed something: the proposals in order, with their status now. Absent when none.')),
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

export const StreamAction = v.pipe(
  v.object({ type: v.literal('action'), action: ChatAction }),
  v.description('A proposal (status `proposed`), before `done`; the stored message carries it in `actions`. Confirm it with chat.actions.confirm.'),
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
  v.variant('type', [StreamStart, StreamDelta, StreamAction, StreamDone, StreamError]),
  v.description('One `data:` line of the reply stream: `start`, then `delta` pieces and `action` proposals, then `done` or a last `error`.'),
);
