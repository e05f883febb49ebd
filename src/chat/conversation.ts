// One turn of the assistant: the model request for a new message in a thread, grounded in live data, and the
// checks on what comes back. The streamed and the whole reply run the same conversation.
import type { ChatRepository } from '../db/chat.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Clock } from '../domain/clock.ts';
import type { CustomerFigures } from '../domain/customer-summary.ts';
import { AppError } from '../domain/errors.ts';
import type { ModelRequest } from '../llm/model.ts';
import { readGrounding } from './grounding.ts';
import { localReply } from './local-reply.ts';
import { chatPrompt, HISTORY_TURNS } from './prompt.ts';

export interface ConversationDeps {
  chats: ChatRepository;
  customers: CustomerFigures;
  segments: Pick<SegmentRepository, 'listSegments'>;
  clock: Clock;
  /** CHAT_PROMPT_BUDGET: characters of system message and turns together. */
  promptBudget: number;
}

export type Conversation = ReturnType<typeof createConversation>;

/** Returns the conversation: requests for the model, and the check of its reply. */
export function createConversation({ chats, customers, segments, clock, promptBudget }: ConversationDeps) {
  return {
    /**
     * Returns the request answering `content` after the thread's stored messages, with the facts as they are now.
     * Call it before storing `content`, so the new message is not in the history twice.
     */
    request(threadId: string, content: string, signal: AbortSignal): ModelRequest {
      const history = chats.lastMessages(threadId, HISTORY_TURNS);
      const grounding = readGrounding(customers, segments, clock());
      const prompt = chatPrompt(grounding, history, content, promptBudget);
      return { system: prompt.system, messages: prompt.messages, signal, local: () => localReply(grounding, content) };
    },

    /** Returns the reply to store; throws `llm_error` when the model answered nothing but white space. */
    checkReply(text: string): string {
      if (!text.trim()) throw new AppError('llm_error', 'The model answered with an empty reply.');
      return text;
    },
  };
}
