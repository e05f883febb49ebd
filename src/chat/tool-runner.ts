// Running one tool call of the model: its input checked by the tool's schema as its operation would check it, then
// a read tool's data, or a write tool's proposal, as the result the model reads next.
import { randomUUID } from 'node:crypto';
import type { NewAction } from '../db/chat.ts';
import type { SegmentRepository } from '../db/segments.ts';
import { AppError } from '../domain/errors.ts';
import type { ToolCall, ToolResult } from '../llm/model.ts';
import type { ReadTool, ToolTurn, Validate, WriteTool } from './tool.ts';
import { TOOL_SPECS, toolNamed } from './tools.ts';

/** What one call came to: a result for the model and, for a write tool, the proposal it made. */
export interface ToolOutcome {
  result: ToolResult;
  proposal?: NewAction;
  /** The input failed validation (or named no tool): the turn sends that back once only. */
  invalid?: true;
}

export interface ToolRunnerDeps {
  /** Checks a tool's input as a request body is checked (the route layer's validator). */
  validate: Validate;
  segments: Pick<SegmentRepository, 'findSegment'>;
}

/** A result the model reads as data: JSON, whose strings (segment names, titles) cannot break out of it. */
const data = (callId: string, value: unknown): ToolResult => ({ callId, content: JSON.stringify(value) });

const failed = (callId: string, message: string): ToolResult => ({ callId, content: JSON.stringify({ error: message }), isError: true });

const PROPOSED_NOTE = 'Shown to the user as a proposal with Confirm and Dismiss buttons. It has not been done: do not say it has; tell the user to confirm it.';

/** Returns the runner of one tool call for a turn. Never throws for the model's input; rethrows the signal's reason. */
export function toolRunner({ validate, segments }: ToolRunnerDeps) {
  return async (turn: ToolTurn, call: ToolCall): Promise<ToolOutcome> => {
    if (call.unparsed !== undefined) {
      return { result: failed(call.id, 'The arguments were not valid JSON. Send one JSON object matching the input schema.'), invalid: true };
    }
    const tool = toolNamed(call.name);
    if (!tool) {
      const names = TOOL_SPECS.map((t) => t.name).join(', ');
      return { result: failed(call.id, `There is no tool named ${JSON.stringify(call.name.slice(0, 64))}. Use one of: ${names}.`), invalid: true };
    }
    const use = { ...turn, segments };
    try {
      if (tool.access === 'write') {
        const writing: WriteTool = tool; // its summarize reads what its own schema gave
        const input = validate(writing.input, call.input);
        const summary = await writing.summarize(input, use);
        const proposal: NewAction = { id: randomUUID(), kind: tool.name, input, summary };
        return { result: data(call.id, { proposed: true, actionId: proposal.id, summary, note: PROPOSED_NOTE }), proposal };
      }
      const reading: ReadTool = tool;
      return { result: data(call.id, await reading.execute(validate(reading.input, call.input), use)) };
    } catch (error) {
      if (turn.signal.aborted) throw turn.signal.reason;
      if (error instanceof AppError && error.code === 'validation_failed') {
        return { result: failed(call.id, `Invalid input: ${error.message}`), invalid: true };
      }
      if (error instanceof AppError && error.code !== 'internal_error') return { result: failed(call.id, error.message) };
      throw error;
    }
  };
}

export type RunTool = ReturnType<typeof toolRunner>;
