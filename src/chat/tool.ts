// What one assistant tool is, declared as one object in the manner of the Vercel AI SDK's `tool({ description,
// inputSchema, execute })`: its name and description for the model, the valibot schema of the operation it mirrors,
// whether it reads (runs now) or writes (becomes a proposal the user confirms), what it runs, and what the local
// generator says of it. Nothing here knows HTTP: a turn hands its tools a `run` bound to its user and request.
import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { SegmentRepository } from '../db/segments.ts';
import type { ToolSpec } from '../llm/model.ts';

/** The request parts of a direct operation run on a tool's behalf. */
export interface OperationInput {
  body?: unknown;
  query?: Record<string, unknown>;
}

/** Who a turn runs for: its request's signal, and the route table's operations run as its user. */
export interface ToolTurn {
  signal: AbortSignal;
  /** Runs a direct operation by id as the turn's user, with its role, validation and limits; throws what it throws. */
  run(operationId: string, input?: OperationInput): Promise<unknown>;
}

/** What a tool's code is handed: the turn, and the saved segments to look one up by id. */
export interface ToolUse extends ToolTurn {
  segments: Pick<SegmentRepository, 'findSegment'>;
}

/** Returns the input checked as its operation checks a request body; throws `validation_failed`. */
export type Validate = <T>(schema: v.GenericSchema<unknown, T>, input: unknown) => T;

type Json = Record<string, unknown>;

interface ToolBase<Name extends string, Input> {
  name: Name;
  /** What the model reads to choose the tool. */
  description: string;
  /** The body (or query) schema of the operation it mirrors: validates the model's input and is its JSON Schema. */
  input: v.GenericSchema<unknown, Input>;
}

/** A tool that runs now, as the user would run its operations by hand, and answers data for the model. */
export interface ReadTool<Name extends string = string, Input = unknown> extends ToolBase<Name, Input> {
  access: 'read';
  /** Returns the data the model reads; throws what the operations it runs throw. */
  execute(input: Input, use: ToolUse): Promise<unknown>;
  /** What the local generator says of a result, when it has words for it. */
  saysLocally?(result: Json): string | undefined;
}

/** A tool whose call becomes a proposal; confirmed, it runs `operationId` with the proposal's input as the body. */
export interface WriteTool<Name extends string = string, Input = unknown> extends ToolBase<Name, Input> {
  access: 'write';
  operationId: string;
  /** Returns the proposal's one-line summary; throws `validation_failed` for input the operation would refuse. */
  summarize(input: Input, use: ToolUse): Promise<string>;
  /** What confirming does, as the local generator words it: "Confirm it to <confirmTo>". */
  confirmTo: string;
}

export type Tool = ReadTool | WriteTool;

/** Returns a read tool, its name kept as a literal type. */
export const readTool = <const Name extends string, Input>(tool: Omit<ReadTool<Name, Input>, 'access'>): ReadTool<Name, Input> => ({
  access: 'read',
  ...tool,
});

/** Returns a write tool, its name kept as a literal type (the names of write tools are the kinds of proposal). */
export const writeTool = <const Name extends string, Input>(tool: Omit<WriteTool<Name, Input>, 'access'>): WriteTool<Name, Input> => ({
  access: 'write',
  ...tool,
});

/** Returns what the model is offered of a tool: its name, description and the JSON Schema of its input. */
export function specOf({ name, description, input }: Tool): ToolSpec {
  const { $schema: _, ...inputSchema } = toJsonSchema(input, { errorMode: 'ignore', typeMode: 'input' }) as Json;
  return { name, description, inputSchema };
}
