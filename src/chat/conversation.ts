// One turn of the assistant: the model request for a new message in a thread, grounded in live data and offering
// the tools, the turn itself (tools run or proposed), and the checks on what comes back. The streamed and the whole
// reply run the same conversation.
import type { ChatMessage, ChatRepository, NewAction } from '../db/chat.ts';
import type { CustomerRepository } from '../customers/index.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Clock } from '../domain/clock.ts';
import type { CustomerFigures } from '../domain/customer-summary.ts';
import { AppError } from '../domain/errors.ts';
import { cutReplyDetail, type LanguageModel, type ModelMessage, type ModelRequest } from '../llm/model.ts';
import { groundingReader } from './grounding.ts';
import { localTurn, readsCountries } from './local-actions.ts';
import { chatPrompt, HISTORY_TURNS } from './prompt.ts';
import { runTurn, type TurnOutput, type TurnResult } from './tool-loop.ts';
import type { ToolTurn } from './tool.ts';
import type { RunTool } from './tool-runner.ts';
import { TOOL_SPECS } from './tools.ts';

/** What a refusal that came without any words is stored as. */
export const REFUSAL_WITHOUT_WORDS = 'The model declined to answer this request.';

/** What a reply that only proposed, without a word of its own, is stored as. */
export const proposalsOnly = (count: number) => `Here ${count === 1 ? 'is a proposal' : `are ${count} proposals`} for you to confirm or dismiss.`;

export interface ConversationDeps {
  chats: ChatRepository;
  customers: CustomerFigures & Pick<CustomerRepository, 'countryNames'>;
  segments: Pick<SegmentRepository, 'listSegments'>;
  model: LanguageModel;
  /** Runs one tool call as the turn's user (see tool-runner.ts). */
  runTool: RunTool;
  clock: Clock;
  /** The customers generation: moves with every customer write. */
  customersGeneration: () => number;
  /** CHAT_PROMPT_BUDGET: characters of system message and turns together. */
  promptBudget: number;
}

/** What to store of a turn. */
export interface SettledReply {
  content: string;
  truncated: boolean;
  actions: NewAction[];
}

export type Conversation = ReturnType<typeof createConversation>;

/** An earlier reply as the model sees it again: its text, then what it proposed and what became of it. */
function asTurn(m: ChatMessage): ModelMessage {
  if (!m.actions?.length) return { role: m.role, content: m.content };
  const lines = m.actions.map((a) => `- ${a.kind} ${JSON.stringify(a.summary)}: ${a.status}${a.resultId ? `, made ${a.resultId}` : ''}`);
  return { role: m.role, content: `${m.content}\n\n[Proposals in this reply, as data:\n${lines.join('\n')}]` };
}

/** Returns the conversation: requests for the model, the turn, and the check of its result. */
export function createConversation({ chats, customers, segments, model, runTool, clock, customersGeneration, promptBudget }: ConversationDeps) {
  const facts = groundingReader(customers, segments, customersGeneration);
  return {
    /**
     * Resolves to the request answering `content` after the thread's stored messages, with the facts as they are
     * now and the tools. Call it before storing `content`, so the new message is not in the history twice.
     */
    async request(threadId: string, content: string, signal: AbortSignal): Promise<ModelRequest> {
      const history = (await chats.lastMessages(threadId, HISTORY_TURNS)).map(asTurn);
      const grounding = await facts(clock());
      const prompt = chatPrompt(grounding, history, content, promptBudget);
      // The local generator is synchronous: the country names it may need are read now, and only if it may need them.
      const countries = readsCountries(content) ? await customers.countryNames() : [];
      return {
        system: prompt.system,
        messages: prompt.messages,
        tools: TOOL_SPECS,
        signal,
        local: (messages) => localTurn(grounding, content, messages, () => countries),
      };
    },

    /** Runs the turn for `turn.user`, sending its text and proposals to `out` as they come (see runTurn). */
    turn(request: ModelRequest, turn: ToolTurn, out: TurnOutput): Promise<TurnResult | undefined> {
      return runTurn(model, request, runTool, turn, out);
    },

    /**
     * Returns what to store of a turn: its content, whether it was cut at the token budget, and its proposals. A
     * refusal is the reply; one without words gets a sentence, added after the text so far, as does a turn that
     * only proposed. Throws `llm_error` for an empty reply, naming LLM_MAX_TOKENS when the budget ran out before
     * any text.
     */
    settle({ text, finish, proposals }: TurnResult): SettledReply {
      const blank = !text.trim();
      if (finish.reason === 'refusal') return { content: blank ? `${text}${REFUSAL_WITHOUT_WORDS}` : text, truncated: false, actions: proposals };
      if (blank && proposals.length) return { content: `${text}${proposalsOnly(proposals.length)}`, truncated: finish.reason === 'length', actions: proposals };
      if (finish.reason === 'length' && blank) throw new AppError('llm_error', cutReplyDetail(finish, false));
      if (blank) throw new AppError('llm_error', 'The model answered with an empty reply.');
      return { content: text, truncated: finish.reason === 'length', actions: proposals };
    },
  };
}
