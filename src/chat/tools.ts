// The assistant's tools. Read tools run at once, as the user would run the operation by hand; write tools only
// become proposals the user confirms. Each tool's input is the body (or query) of one direct operation: its JSON
// Schema for the model comes from the same valibot schema that validates that operation.
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { randomUUID } from 'node:crypto';
import type { NewAction } from '../db/chat.ts';
import type { Segment, SegmentRepository } from '../db/segments.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import type { ActionKind } from '../domain/chat.ts';
import { AppError } from '../domain/errors.ts';
import { describeAudience, type Condition } from '../domain/segments.ts';
import type { Context } from '../http/context.ts';
import type { RunOperation } from '../http/run-operation.ts';
import { parseBody } from '../http/validate.ts';
import type { ToolCall, ToolResult, ToolSpec } from '../llm/model.ts';
import { CampaignListQuery, GenerateRequest } from '../schemas/campaigns.ts';
import { PreviewRequest, SegmentRequest } from '../schemas/segments.ts';
import { customers } from './wording.ts';

/** How many campaigns `list_campaigns` shows, newest first. */
export const LISTED_CAMPAIGNS = 20;

/** Who a turn runs for and on whose request: tools run as this user. */
export interface ToolTurn {
  user: AuthUser;
  ctx: Context;
}

/** What one call came to: a result for the model and, for a write tool, the proposal it made. */
export interface ToolOutcome {
  result: ToolResult;
  proposal?: NewAction;
  /** The input failed validation (or named no tool): the turn sends that back once only. */
  invalid?: true;
}

type Json = Record<string, unknown>;

/** Returns the JSON Schema of a tool's input from the valibot schema that validates it. */
function inputSchemaOf(schema: v.GenericSchema): Json {
  const { $schema: _, ...rest } = toJsonSchema(schema, { errorMode: 'ignore', typeMode: 'input' }) as Json;
  return rest;
}

const NoInput = v.object({});
/** `list_campaigns`: the status filter of `campaigns.list`. */
const CampaignFilter = v.pick(CampaignListQuery, ['status']);

/** The tools offered to the model, in the order it reads them. */
export const TOOL_SPECS: readonly ToolSpec[] = [
  {
    name: 'count_audience',
    description:
      'Count the customers matching conditions (combined with AND), live: country and status (eq, neq, or in a list), totalTransactions, totalAmountSpent and lastActivityDays (gt, gte, lt, lte). Use it to answer "how many" questions and to size an audience before proposing one.',
    inputSchema: inputSchemaOf(PreviewRequest),
  },
  {
    name: 'list_segments',
    description: 'The saved segments: id, name, their conditions in words and their audience size. Use it to find a segment id.',
    inputSchema: inputSchemaOf(NoInput),
  },
  {
    name: 'customer_summary',
    description: 'The live KPIs and health of the whole customer base: counts by status, lifetime value, health score and its parts.',
    inputSchema: inputSchemaOf(NoInput),
  },
  {
    name: 'list_campaigns',
    description: `The ${LISTED_CAMPAIGNS} newest campaigns, optionally only those in one status: id, title, status, channel and segment.`,
    inputSchema: inputSchemaOf(CampaignFilter),
  },
  {
    name: 'save_segment',
    description:
      'Propose saving a segment with a name and conditions. It is NOT saved: the user sees the proposal with its size and confirms or dismisses it. Never say it was saved.',
    inputSchema: inputSchemaOf(SegmentRequest),
  },
  {
    name: 'draft_campaign',
    description:
      'Propose drafting a campaign for a saved segment (its id from list_segments) with an objective, a channel and a tone. It is NOT drafted: the user confirms or dismisses the proposal. Never say it was drafted.',
    inputSchema: inputSchemaOf(GenerateRequest),
  },
];

const WRITE_TOOLS: Record<ActionKind, v.GenericSchema> = { save_segment: SegmentRequest, draft_campaign: GenerateRequest };

const isWriteTool = (name: string): name is ActionKind => Object.hasOwn(WRITE_TOOLS, name);

/** A result the model reads as data: JSON, whose strings (segment names, titles) cannot break out of it. */
const data = (callId: string, value: unknown): ToolResult => ({ callId, content: JSON.stringify(value) });

const failed = (callId: string, message: string): ToolResult => ({ callId, content: JSON.stringify({ error: message }), isError: true });

export interface ToolDeps {
  run: RunOperation;
  segments: Pick<SegmentRepository, 'findSegment'>;
}

/** Returns the runner of one tool call for a turn. Never throws for the model's input; rethrows the signal's reason. */
export function toolRunner({ run, segments }: ToolDeps) {
  const segmentFact = (s: Segment) => ({ id: s.id, name: s.name, audience: describeAudience(s.conditions), size: s.matchCount });

  const countOf = async (turn: ToolTurn, conditions: readonly Condition[]) =>
    ((await run('segments.preview', { ...turn, body: { conditions } })) as { matchCount: number }).matchCount;

  /** Read tools: the operation runs now, as the user. */
  const read: Record<string, (turn: ToolTurn, input: unknown) => Promise<unknown>> = {
    async count_audience(turn, input) {
      const { conditions } = parseBody(PreviewRequest, input) as { conditions: Condition[] };
      return { matchCount: await countOf(turn, conditions), audience: describeAudience(conditions) };
    },
    async list_segments(turn) {
      return { segments: ((await run('segments.list', turn)) as Segment[]).map(segmentFact) };
    },
    async customer_summary(turn) {
      const [kpis, health] = await Promise.all([run('customers.kpis', turn), run('customers.health', turn)]);
      return { kpis, health };
    },
    async list_campaigns(turn, input) {
      const { status } = parseBody(CampaignFilter, input) as { status?: string };
      const page = (await run('campaigns.list', { ...turn, query: { ...(status ? { status } : {}), limit: LISTED_CAMPAIGNS } })) as {
        items: { id: string; title: string; status: string; channel: string; segmentName: string | null; createdAt: string }[];
        total: number;
      };
      return {
        total: page.total,
        campaigns: page.items.map((c) => ({ id: c.id, title: c.title, status: c.status, channel: c.channel, segment: c.segmentName, createdAt: c.createdAt })),
      };
    },
  };

  /** Write tools: the input is checked as the operation would check it, and becomes a proposal. */
  const propose = async (turn: ToolTurn, kind: ActionKind, raw: unknown): Promise<Omit<NewAction, 'id'>> => {
    const input = parseBody(WRITE_TOOLS[kind], raw) as Json;
    if (kind === 'save_segment') {
      const { name, conditions } = input as { name: string; conditions: Condition[] };
      const size = await countOf(turn, conditions);
      return { kind, input, summary: `Save segment “${name}” — ${customers(size)} (${describeAudience(conditions)})` };
    }
    const { segmentId, objective, channel, tone } = input as { segmentId: string; objective: string; channel: string; tone: string };
    const segment = segments.findSegment(segmentId);
    if (!segment) throw new AppError('validation_failed', 'segmentId: No saved segment has this id; call list_segments for the ids.');
    const brief = objective.length > 120 ? `${objective.slice(0, 119).trimEnd()}…` : objective;
    return { kind, input, summary: `Draft ${channel === 'email' ? 'an email' : channel === 'sms' ? 'an SMS' : 'a push'} campaign for “${segment.name}” — ${brief} (${tone})` };
  };

  return async (turn: ToolTurn, call: ToolCall): Promise<ToolOutcome> => {
    if (call.unparsed !== undefined) {
      return { result: failed(call.id, 'The arguments were not valid JSON. Send one JSON object matching the input schema.'), invalid: true };
    }
    try {
      if (isWriteTool(call.name)) {
        const proposal = { id: randomUUID(), ...(await propose(turn, call.name, call.input)) };
        const note = 'Shown to the user as a proposal with Confirm and Dismiss buttons. It has not been done: do not say it has; tell the user to confirm it.';
        return { result: data(call.id, { proposed: true, actionId: proposal.id, summary: proposal.summary, note }), proposal };
      }
      const tool = Object.hasOwn(read, call.name) ? read[call.name] : undefined;
      if (!tool) return { result: failed(call.id, `There is no tool named ${JSON.stringify(call.name.slice(0, 64))}. Use one of: ${TOOL_SPECS.map((t) => t.name).join(', ')}.`), invalid: true };
      return { result: data(call.id, await tool(turn, call.input)) };
    } catch (error) {
      if (turn.ctx.signal.aborted) throw turn.ctx.signal.reason;
      if (error instanceof AppError && error.code === 'validation_failed') {
        return { result: failed(call.id, `Invalid input: ${error.message}`), invalid: true };
      }
      if (error instanceof AppError && error.code !== 'internal_error') return { result: failed(call.id, error.message) };
      throw error;
    }
  };
}

export type RunTool = ReturnType<typeof toolRunner>;
