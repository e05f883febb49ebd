// One turn of the assistant: the model request for a new message in a thread, grounded in live data, and the
// checks on what comes back. The streamed and the whole reply run the same conversation.
import type { ChatRepository } from '../db/chat.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Clock } from '../domain/clock.ts';
import type { CustomerFigures } from '../domain/customer-summary.ts';
import { AppError } from '../domain/errors.ts';
import { cutReplyDetail, type ModelRequest, type Reply } from '../llm/model.ts';
import { groundingReader } from './grounding.ts';
import { localReply } from './local-reply.ts';
import { chatPrompt, HISTORY_TURNS } from './prompt.ts';

/** What a refusal that came without any words is stored as. */
export const REFUSAL_WITHOUT_WORDS = 'The model declined to answer this request.';

export interface ConversationDeps {
  chats: ChatRepository;
  customers: CustomerFigures;
  segments: Pick<SegmentRepository, 'listSegments'>;
  clock: Clock;
  /** The customers generation: moves with every customer write. */
  customersGeneration: () => number;
  /** CHAT_PROMPT_BUDGET: characters of system message and turns together. */
  promptBudget: number;
}

export type Conversation = ReturnType<typeof createConversation>;

/** Returns the conversation: requests for the model, and the check of its reply. */
export function createConversation({ chats, customers, segments, clock, customersGeneration, promptBudget }: ConversationDeps) {
  const facts = groundingReader(customers, segments, customersGeneration);
  return {
    /**
     * Returns the request answering `content` after the thread's stored messages, with the facts as they are now.
     * Call it before storing `content`, so the new message is not in the history twice.
     */
    request(threadId: string, content: string, signal: AbortSignal): ModelRequest {
      const history = chats.lastMessages(threadId, HISTORY_TURNS);
      const grounding = facts(clock());
      const prompt = chatPrompt(grounding, history, content, promptBudget);
      return { system: prompt.system, messages: prompt.messages, signal, local: () => localReply(grounding, content) };
    },

    /**
     * Returns what to store of a reply: its content and whether it was cut at the token budget. A refusal is the
     * reply; one without words gets a sentence, added after the text so far. Throws `llm_error` for an empty reply,
     * naming LLM_MAX_TOKENS when the budget ran out before any text.
     */
    settle({ text, finish }: Reply): { content: string; truncated: boolean } {
      const blank = !text.trim();
      if (finish.reason === 'refusal') return { content: blank ? `${text}${REFUSAL_WITHOUT_WORDS}` : text, truncated: false };
      if (finish.reason === 'length' && blank) throw new AppError('llm_error', cutReplyDetail(finish, false));
      if (blank) throw new AppError('llm_error', 'The model answered with an empty reply.');
      return { content: text, truncated: finish.reason === 'length' };
    },
  };
}
