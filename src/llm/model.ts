// The one interface features speak to a language model through. Nothing outside src/llm/ sees a wire format.

export type LlmProvider = 'openai' | 'anthropic' | 'local';

export interface ModelMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ModelRequest {
  /** Instructions; sent as the system message (OpenAI) or the `system` field (Anthropic). */
  system: string;
  /** The conversation, oldest first; the last one is the user's. */
  messages: readonly ModelMessage[];
  /** Asks for one JSON object matching this JSON Schema, through the provider's JSON output mode where it has one. */
  json?: { name: string; schema: Record<string, unknown> };
  /** Aborts the call (and any retry wait) when the client leaves or the service stops. */
  signal: AbortSignal;
  /** The reply of the local generator: the feature writes it from its own data, so no network is needed. */
  local: () => string;
}

/**
 * How a reply ended. `stop`: the model finished. `length`: it was cut at the token budget. `refusal`: the model (or
 * the provider's filter) declined, and the text, if any, is its explanation.
 */
export type FinishReason = 'stop' | 'length' | 'refusal';

export interface Finish {
  reason: FinishReason;
  /** Whether the model reasoned ("thought") before or while answering; reasoning itself is never passed on. */
  reasoned: boolean;
  /** The token budget the request carried (LLM_MAX_TOKENS), for messages about a cut reply. */
  maxTokens: number;
  /** The model the server says answered, when it says so. */
  servedBy?: string;
}

/** What a stream yields: pieces of the reply's text as they arrive, then exactly one `finish`. */
export type ReplyPart = { type: 'text'; text: string } | { type: 'finish'; finish: Finish };

/** A whole reply: its text (for a `json` request, the JSON text of the object) and how it ended. */
export interface Reply {
  text: string;
  finish: Finish;
}

export interface LanguageModel {
  readonly provider: LlmProvider;
  /** The model name stored with what it wrote: the configured model, or `local`. */
  readonly model: string;
  /**
   * Yields the reply as the provider sends it; the last part is always the `finish`. A reply that did not end
   * normally, cut or refused, is still a reply: the finish says so, and the feature decides.
   * Throws AppError `llm_unavailable` when the provider cannot be reached, stays silent for LLM_TIMEOUT_MS on every
   * attempt, breaks off, or refuses the request; `llm_error` when it answers with something that is not a reply;
   * rethrows the signal's reason when aborted. A failure after text was yielded is never retried.
   */
  stream(request: ModelRequest): AsyncIterable<ReplyPart>;
  /** Returns the whole reply; made as a stream like every provider call. Throws like `stream`. */
  complete(request: ModelRequest): Promise<Reply>;
}

/** Returns the text and the finish of a stream of reply parts; throws what the stream throws. */
export async function collectReply(parts: AsyncIterable<ReplyPart>): Promise<Reply> {
  let text = '';
  for await (const part of parts) {
    if (part.type === 'text') text += part.text;
    else return { text, finish: part.finish };
  }
  // Every stream ends with a finish; a model that breaks that promise is our bug, not the provider's.
  throw new Error('The reply stream ended without a finish.');
}

/**
 * Returns a sentence for a reply cut at the token budget, naming LLM_MAX_TOKENS and saying whether reasoning
 * spent it; `hadText` says whether any reply text came before the cut.
 */
export function cutReplyDetail(finish: Finish, hadText: boolean): string {
  if (!hadText && finish.reasoned) {
    return `The model spent its whole token budget (LLM_MAX_TOKENS=${finish.maxTokens}) reasoning and wrote no reply; raise LLM_MAX_TOKENS (thinking models need several thousand).`;
  }
  return `The model's reply was cut at its token budget (LLM_MAX_TOKENS=${finish.maxTokens}) before it finished${finish.reasoned ? ', part of it spent reasoning' : ''}; raise LLM_MAX_TOKENS.`;
}
