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
  /** Upper bound on the reply's length in tokens. */
  maxTokens?: number;
  /** Aborts the call (and any retry wait) when the client leaves or the service stops. */
  signal: AbortSignal;
  /** The reply of the local generator: the feature writes it from its own data, so no network is needed. */
  local: () => string;
}

export interface LanguageModel {
  readonly provider: LlmProvider;
  /** The model name stored with what it wrote: the configured model, or `local`. */
  readonly model: string;
  /**
   * Returns the whole reply text (for a `json` request, the JSON text of the object).
   * Throws AppError `llm_unavailable` when the provider cannot be reached, times out on every attempt or refuses
   * the request, `llm_error` when it answers with something that is not a reply; rethrows the signal's reason
   * when aborted.
   */
  complete(request: ModelRequest): Promise<string>;
  /** Yields the reply in pieces as the provider sends them; throws like `complete`, also after pieces were yielded. */
  stream(request: ModelRequest): AsyncIterable<string>;
}
