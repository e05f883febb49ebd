// The one interface features speak to a language model through. Nothing outside src/llm/ sees a wire format.
import type { LlmProvider, LlmSettings } from '../config.ts';

/** The LLM_* settings a network provider needs: its base URL and model name required (loadConfig checks both). */
export type ProviderSettings = Omit<LlmSettings, 'provider' | 'baseUrl' | 'model'> & { baseUrl: string; model: string };

/** A tool the model may call. The feature runs it (or proposes it) and answers with a ToolResult. */
export interface ToolSpec {
  /** What the model calls it by, unique in a request: 1 to 64 letters, digits, `_` or `-` (what both wire formats accept). */
  name: string;
  /** What it does and when to use it, for the model to read. */
  description: string;
  /** Its input as a JSON Schema object (`{ type: 'object', properties, required }`). */
  inputSchema: Record<string, unknown>;
}

/** One call the model made, its arguments complete. */
export interface ToolCall {
  /** The provider's id for the call (`call_…`, `toolu_…`, `local_…`); its result must name it. */
  id: string;
  name: string;
  /**
   * The arguments as parsed JSON, usually an object; empty arguments are `{}`. Model output is untrusted: validate it
   * like a request body. `undefined` exactly when the arguments were not JSON, see `unparsed`.
   */
  input: unknown;
  /**
   * Present only when the arguments were not valid JSON (a cut or malformed reply): their raw text. The call is still
   * yielded so the feature can answer it with a ToolResult whose `isError` says so, quoting this if it helps.
   */
  unparsed?: string;
}

/** What the feature answers to one ToolCall. */
export interface ToolResult {
  /** The `id` of the call it answers. */
  callId: string;
  /** What the model reads: the result (often as JSON text), or what went wrong in words. */
  content: string;
  /**
   * The call failed (invalid input, unknown tool, refused). Anthropic carries the flag as `is_error`; OpenAI has none,
   * so `content` should say it failed in words too.
   */
  isError?: boolean;
}

/**
 * A turn of text: the user's, or the assistant's. An assistant turn that called tools carries the calls exactly as
 * they were yielded (its `content` is the text before them, often empty), and must be followed by a ToolResults
 * message answering every call.
 */
export type ModelMessage = { role: 'user'; content: string } | { role: 'assistant'; content: string; toolCalls?: readonly ToolCall[] };

/** The results of the tool calls of the assistant message just before it, one per call, best in the calls' order. */
export interface ToolResults {
  role: 'tool';
  results: readonly ToolResult[];
}

/** One entry of the conversation sent to the model. */
export type ModelTurn = ModelMessage | ToolResults;

/**
 * What the local generator answers: text, tool calls, or both (the text is streamed first). A call without an `id`
 * gets a fresh `local_…` one. With calls the finish is `tool_calls`, as a provider's would be.
 */
export interface LocalTurn {
  text?: string;
  toolCalls?: readonly (Omit<ToolCall, 'id' | 'unparsed'> & { id?: string })[];
}

export interface ModelRequest {
  /** Instructions; sent as the system message (OpenAI) or the `system` field (Anthropic). */
  system: string;
  /** The conversation, oldest first; the last one is the user's, or the results of the model's last tool calls. */
  messages: readonly ModelTurn[];
  /** Asks for one JSON object matching this JSON Schema, through the provider's JSON output mode where it has one. */
  json?: { name: string; schema: Record<string, unknown> };
  /**
   * Tools the model may call (the model chooses; none is forced). From a provider, only a request with tools yields
   * `tool-call` parts; the local generator yields what `local` scripts. A request has `json` or `tools`, never both:
   * its stream throws an Error for that mistake before sending anything.
   */
  tools?: readonly ToolSpec[];
  /** Aborts the call (and any retry wait) when the client leaves or the service stops. */
  signal: AbortSignal;
  /**
   * The reply of the local generator, given the same conversation: the feature writes it from its own data, so no
   * network is needed. A string is plain text; a LocalTurn may call tools (the feature sees its results in the
   * conversation of the next call, last, as a `tool` message).
   */
  local: (messages: readonly ModelTurn[]) => string | LocalTurn;
}

/**
 * How a reply ended. `stop`: the model finished. `length`: it was cut at the token budget. `refusal`: the model (or
 * the provider's filter) declined, and the text, if any, is its explanation. `tool_calls`: the model called tools
 * (at least one `tool-call` part came) and wants their results to continue; it is the finish exactly when a call came
 * and the reply was neither cut nor refused.
 */
export type FinishReason = 'stop' | 'length' | 'refusal' | 'tool_calls';

export interface Finish {
  reason: FinishReason;
  /** Whether the model reasoned ("thought") before or while answering; reasoning itself is never passed on. */
  reasoned: boolean;
  /** The token budget the request carried (LLM_MAX_TOKENS), for messages about a cut reply. */
  maxTokens: number;
  /** The model the server says answered, when it says so. */
  servedBy?: string;
}

/**
 * What a stream yields: pieces of the reply's text as they arrive, each tool call once its arguments are complete
 * (after any text before it; OpenAI's calls all come just before the finish, Anthropic's as each block ends), then
 * exactly one `finish`.
 */
export type ReplyPart = { type: 'text'; text: string } | { type: 'tool-call'; call: ToolCall } | { type: 'finish'; finish: Finish };

/** A whole reply: its text (for a `json` request, the JSON text of the object), its tool calls and how it ended. */
export interface Reply {
  text: string;
  finish: Finish;
  /** The tool calls in the order they came; present only when there were any. */
  toolCalls?: ToolCall[];
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
   * rethrows the signal's reason when aborted; throws Error for a request with both `json` and `tools`. A failure
   * after text or a tool call was yielded is never retried.
   */
  stream(request: ModelRequest): AsyncIterable<ReplyPart>;
  /** Returns the whole reply; made as a stream like every provider call. Throws like `stream`. */
  complete(request: ModelRequest): Promise<Reply>;
}

/** Returns the text, the tool calls and the finish of a stream of reply parts; throws what the stream throws. */
export async function collectReply(parts: AsyncIterable<ReplyPart>): Promise<Reply> {
  let text = '';
  const toolCalls: ToolCall[] = [];
  for await (const part of parts) {
    if (part.type === 'text') text += part.text;
    else if (part.type === 'tool-call') toolCalls.push(part.call);
    else return { text, finish: part.finish, ...(toolCalls.length ? { toolCalls } : {}) };
  }
  // Every stream ends with a finish; a model that breaks that promise is our bug, not the provider's.
  throw new Error('The reply stream ended without a finish.');
}

/** Throws Error for a request no provider can serve: one asking for JSON and offering tools (a feature's bug). */
export function checkRequest(request: ModelRequest): void {
  if (request.json && request.tools?.length) throw new Error('A model request asks for JSON or offers tools, not both.');
}

/** Returns the finish reason that agrees with the calls a reply made: `tool_calls` exactly when there were any. */
export function reasonWithCalls(reason: FinishReason, calls: number): FinishReason {
  if (calls > 0 && reason === 'stop') return 'tool_calls';
  if (calls === 0 && reason === 'tool_calls') return 'stop';
  return reason;
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
