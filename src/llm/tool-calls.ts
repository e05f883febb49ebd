// Tool calls as both wire formats carry them: arguments that arrive as JSON text in pieces, read once complete, and
// sent back the way the model wrote them.
import type { ToolCall } from './model.ts';

/**
 * Returns the call with its arguments parsed. Empty arguments (a tool without parameters) are `{}`; arguments that
 * are not JSON keep their raw text in `unparsed`, with `input` undefined. Never throws.
 */
export function readToolCall(id: string, name: string, argumentsText: string): ToolCall {
  if (!argumentsText.trim()) return { id, name, input: {} };
  try {
    return { id, name, input: JSON.parse(argumentsText) as unknown };
  } catch {
    return { id, name, input: undefined, unparsed: argumentsText };
  }
}

/** Returns a call's arguments as JSON text, as the model wrote them when they were not JSON. */
export function argumentsText(call: ToolCall): string {
  return call.unparsed ?? JSON.stringify(call.input ?? {});
}

/** Returns a call's input as an object: Anthropic accepts nothing else, so other inputs go back as `{}`. */
export function inputObject(call: ToolCall): Record<string, unknown> {
  const input = call.input;
  return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
}
