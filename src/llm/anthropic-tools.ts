// Tools on the Messages wire: offered with an `input_schema`, called through `tool_use` content blocks (their input
// streamed as `input_json_delta` pieces), answered with `tool_result` blocks in the next user message.
import type { ModelTurn, ToolCall, ToolSpec } from './model.ts';
import { at } from './provider-request.ts';
import { inputObject, readToolCall } from './tool-calls.ts';

/** Returns the `tools` field offering the feature's tools. */
export function anthropicTools(tools: readonly ToolSpec[]): Record<string, unknown>[] {
  return tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.inputSchema }));
}

type Message = { role: 'user' | 'assistant'; content: string | Record<string, unknown>[] };

/**
 * Returns the conversation as Messages API messages. Plain turns stay `{ role, content }` with string content; an
 * assistant turn with calls becomes blocks (its text, if any, then one `tool_use` per call); results become a user
 * message of `tool_result` blocks, and a user turn right after them joins that message as a text block, since the
 * results must open the user turn that follows the calls.
 */
export function anthropicMessages(turns: readonly ModelTurn[]): Message[] {
  const messages: Message[] = [];
  for (const turn of turns) {
    if (turn.role === 'tool') {
      const results = turn.results.map((result) => ({
        type: 'tool_result',
        tool_use_id: result.callId,
        content: result.content,
        ...(result.isError ? { is_error: true } : {}),
      }));
      messages.push({ role: 'user', content: results });
    } else if (turn.role === 'assistant' && turn.toolCalls?.length) {
      const calls = turn.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: inputObject(call) }));
      // The API refuses an empty text block.
      messages.push({ role: 'assistant', content: [...(turn.content ? [{ type: 'text', text: turn.content }] : []), ...calls] });
    } else {
      const previous = messages.at(-1);
      if (turn.role === 'user' && previous?.role === 'user' && Array.isArray(previous.content)) previous.content.push({ type: 'text', text: turn.content });
      else messages.push({ role: turn.role, content: turn.content });
    }
  }
  return messages;
}

interface Block {
  id: string;
  name: string;
  /** What `content_block_start` said the input was (`{}`), used when no `input_json_delta` follows. */
  startInput: unknown;
  json: string[];
}

/** The `tool_use` blocks of one streamed reply, by block index, each complete at its `content_block_stop`. */
export class StreamedToolUses {
  private readonly open = new Map<number, Block>();

  /** Starts a block if `content_block_start` opens a `tool_use`; returns whether it did. */
  start(payload: unknown): boolean {
    const block = at(payload, 'content_block');
    if (at(block, 'type') !== 'tool_use') return false;
    const id = at(block, 'id');
    const name = at(block, 'name');
    this.open.set(indexOf(payload), { id: typeof id === 'string' ? id : '', name: typeof name === 'string' ? name : '', startInput: at(block, 'input'), json: [] });
    return true;
  }

  /** Adds a `content_block_delta`'s `partial_json` to its block; returns whether the delta belonged to a tool block. */
  add(payload: unknown): boolean {
    const block = this.open.get(indexOf(payload));
    if (!block) return false;
    const piece = at(payload, 'delta', 'partial_json');
    if (typeof piece === 'string') block.json.push(piece);
    return true;
  }

  /** Returns the call a `content_block_stop` completes, or undefined when it closed another kind of block. */
  stop(payload: unknown): ToolCall | undefined {
    const index = indexOf(payload);
    const block = this.open.get(index);
    if (!block) return undefined;
    this.open.delete(index);
    return callOf(block, index);
  }

  /** Returns the blocks still open, in index order: a server that ends the message without closing them still meant them. */
  rest(): ToolCall[] {
    const blocks = [...this.open.entries()].sort(([a], [b]) => a - b);
    this.open.clear();
    return blocks.map(([index, block]) => callOf(block, index));
  }
}

/** Returns the calls of a whole message's `tool_use` blocks. */
export function wholeToolUses(content: unknown[]): ToolCall[] {
  return content
    .filter((block) => at(block, 'type') === 'tool_use')
    .map((block, n) => {
      const id = at(block, 'id');
      const name = at(block, 'name');
      return callOf({ id: typeof id === 'string' ? id : '', name: typeof name === 'string' ? name : '', startInput: at(block, 'input'), json: [] }, n);
    });
}

function callOf(block: Block, n: number): ToolCall {
  const id = block.id || `toolu_${n}`;
  const json = block.json.join('');
  if (json.trim() || typeof block.startInput !== 'object' || block.startInput === null) return readToolCall(id, block.name, json);
  return { id, name: block.name, input: block.startInput };
}

const indexOf = (payload: unknown): number => {
  const index = at(payload, 'index');
  return typeof index === 'number' ? index : 0;
};
