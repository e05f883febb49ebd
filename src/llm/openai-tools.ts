// Tools on the Chat Completions wire: offered as `function` tools, called through `tool_calls` (streamed by index,
// arguments in pieces), answered with one `role: "tool"` message per result.
import type { ModelTurn, ToolCall, ToolSpec } from './model.ts';
import { at } from './provider-request.ts';
import { argumentsText, readToolCall } from './tool-calls.ts';

/** Returns the `tools` field offering the feature's tools. */
export function openAiTools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } }));
}

/**
 * Returns the conversation as Chat Completions messages. Plain turns stay `{ role, content }`; an assistant turn with
 * calls carries `tool_calls` (its content `null` when empty, as OpenAI sends it); each result is its own `tool` message.
 */
export function openAiMessages(turns: readonly ModelTurn[]): Record<string, unknown>[] {
  return turns.flatMap((turn): Record<string, unknown>[] => {
    if (turn.role === 'tool') return turn.results.map((result) => ({ role: 'tool', tool_call_id: result.callId, content: result.content }));
    if (turn.role === 'assistant' && turn.toolCalls?.length) {
      const toolCalls = turn.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: argumentsText(call) } }));
      return [{ role: 'assistant', content: turn.content || null, tool_calls: toolCalls }];
    }
    return [{ role: turn.role, content: turn.content }];
  });
}

interface Accumulating {
  id: string;
  name: string;
  arguments: string[];
}

/**
 * The calls of one streamed reply, put together from `delta.tool_calls` pieces: a call's id, type and name come in
 * its first piece, its arguments spread over many, several calls side by side told apart by `index`.
 */
export class StreamedToolCalls {
  private readonly calls: Accumulating[] = [];
  /** Where the call now being streamed at each wire index is kept. */
  private readonly slots = new Map<number, Accumulating>();

  /** Adds one chunk's `delta.tool_calls`; anything that is not a list of pieces is ignored. */
  add(pieces: unknown): void {
    if (!Array.isArray(pieces)) return;
    pieces.forEach((piece, position) => {
      const wireIndex = at(piece, 'index');
      const index = typeof wireIndex === 'number' ? wireIndex : position;
      const id = text(at(piece, 'id'));
      const name = text(at(piece, 'function', 'name'));
      let call = this.slots.get(index);
      // Some servers (Ollama) give every call of a parallel batch the same index, each whole with a new id and name.
      if (!call || (id && name && call.id && id !== call.id)) {
        call = { id: '', name: '', arguments: [] };
        this.calls.push(call);
        this.slots.set(index, call);
      }
      if (id && !call.id) call.id = id;
      if (name && !call.name) call.name = name;
      const args = at(piece, 'function', 'arguments');
      if (typeof args === 'string') call.arguments.push(args);
      // A few servers send the arguments as an object rather than JSON text.
      else if (typeof args === 'object' && args !== null) call.arguments = [JSON.stringify(args)];
    });
  }

  /** Returns the complete calls in the order they started; a call the server gave no id gets `call_<n>`. */
  done(): ToolCall[] {
    return this.calls.map((call, n) => readToolCall(call.id || `call_${n}`, call.name, call.arguments.join('')));
  }
}

/** Returns the calls of a whole `chat.completion` message (`message.tool_calls`). */
export function wholeToolCalls(message: unknown): ToolCall[] {
  const calls = new StreamedToolCalls();
  const pieces = at(message, 'tool_calls');
  // A whole message lists each call once, so its position is its index even when a server leaves `index` out.
  if (Array.isArray(pieces)) calls.add(pieces.map((piece, index) => ({ index, ...(piece as object) })));
  return calls.done();
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);
