// The assistant's tools, each one object (see tool.ts), and what the rest of the code derives from this one list:
// the specs offered to the model, the kinds of proposal (the write tools' names) and the operation a confirmed
// proposal runs. Read tools run at once, as the user would run the operation by hand; write tools only become
// proposals the user confirms. Each tool's input is the body (or query) schema of one direct operation.
import * as v from 'valibot';
import type { Segment } from '../db/segments.ts';
import { AppError } from '../domain/errors.ts';
import { describeAudience, type Condition } from '../domain/segments.ts';
import type { ActionKind } from '../domain/chat.ts';
import type { ToolSpec } from '../llm/model.ts';
import { CampaignListQuery, GenerateRequest } from '../schemas/campaigns.ts';
import { PreviewRequest, SegmentRequest } from '../schemas/segments.ts';
import { readTool, specOf, writeTool, type ToolUse } from './tool.ts';
import { customers } from './wording.ts';

/** How many campaigns `list_campaigns` shows, newest first. */
export const LISTED_CAMPAIGNS = 20;

const NoInput = v.object({});
/** `list_campaigns`: the status filter of `campaigns.list`. */
const CampaignFilter = v.pick(CampaignListQuery, ['status']);

const countOf = async (use: ToolUse, conditions: readonly Condition[]) =>
  ((await use.run('segments.preview', { body: { conditions } })) as { matchCount: number }).matchCount;

const segmentFact = (s: Segment) => ({ id: s.id, name: s.name, audience: describeAudience(s.conditions), size: s.matchCount });

/** `count_audience`: the size and wording of an audience, by segments.preview. */
export const countAudience = readTool({
  name: 'count_audience',
  description:
    'Count the customers matching conditions (combined with AND), live: country and status (eq, neq, or in a list), totalTransactions, totalAmountSpent and lastActivityDays (gt, gte, lt, lte). Use it to answer "how many" questions and to size an audience before proposing one.',
  input: PreviewRequest,
  async execute(input, use) {
    const conditions = input.conditions as Condition[];
    return { matchCount: await countOf(use, conditions), audience: describeAudience(conditions) };
  },
  saysLocally: ({ matchCount, audience }) =>
    typeof matchCount === 'number' ? `${customers(matchCount)} ${matchCount === 1 ? 'matches' : 'match'}: ${String(audience)}.` : undefined,
});

const listSegments = readTool({
  name: 'list_segments',
  description: 'The saved segments: id, name, their conditions in words and their audience size. Use it to find a segment id.',
  input: NoInput,
  async execute(_, use) {
    return { segments: ((await use.run('segments.list')) as Segment[]).map(segmentFact) };
  },
});

const customerSummary = readTool({
  name: 'customer_summary',
  description: 'The live KPIs and health of the whole customer base: counts by status, lifetime value, health score and its parts.',
  input: NoInput,
  async execute(_, use) {
    const [kpis, health] = await Promise.all([use.run('customers.kpis'), use.run('customers.health')]);
    return { kpis, health };
  },
});

interface CampaignRow {
  id: string;
  title: string;
  status: string;
  channel: string;
  segmentName: string | null;
  createdAt: string;
}

const listCampaigns = readTool({
  name: 'list_campaigns',
  description: `The ${LISTED_CAMPAIGNS} newest campaigns, optionally only those in one status: id, title, status, channel and segment.`,
  input: CampaignFilter,
  async execute({ status }, use) {
    const query = { ...(status ? { status } : {}), limit: LISTED_CAMPAIGNS };
    const page = (await use.run('campaigns.list', { query })) as { items: CampaignRow[]; total: number };
    return {
      total: page.total,
      campaigns: page.items.map((c) => ({ id: c.id, title: c.title, status: c.status, channel: c.channel, segment: c.segmentName, createdAt: c.createdAt })),
    };
  },
});

/** `save_segment`: proposes segments.create. */
export const saveSegment = writeTool({
  name: 'save_segment',
  description:
    'Propose saving a segment with a name and conditions. It is NOT saved: the user sees the proposal with its size and confirms or dismisses it. Never say it was saved.',
  input: SegmentRequest,
  operationId: 'segments.create',
  async summarize({ name, conditions }, use) {
    const size = await countOf(use, conditions as Condition[]);
    return `Save segment “${name}” — ${customers(size)} (${describeAudience(conditions as Condition[])})`;
  },
  confirmTo: 'save the segment',
});

/** `draft_campaign`: proposes campaigns.generate. */
export const draftCampaign = writeTool({
  name: 'draft_campaign',
  description:
    'Propose drafting a campaign for a saved segment (its id from list_segments) with an objective, a channel and a tone. It is NOT drafted: the user confirms or dismisses the proposal. Never say it was drafted.',
  input: GenerateRequest,
  operationId: 'campaigns.generate',
  async summarize({ segmentId, objective, channel, tone }, use) {
    const segment = await use.segments.findSegment(segmentId);
    if (!segment) throw new AppError('validation_failed', 'segmentId: No saved segment has this id; call list_segments for the ids.');
    const brief = objective.length > 120 ? `${objective.slice(0, 119).trimEnd()}…` : objective;
    return `Draft ${channel === 'email' ? 'an email' : channel === 'sms' ? 'an SMS' : 'a push'} campaign for “${segment.name}” — ${brief} (${tone})`;
  },
  confirmTo: 'draft the campaign',
});

/** Every tool, in the order the model reads them. */
export const TOOLS = [countAudience, listSegments, customerSummary, listCampaigns, saveSegment, draftCampaign] as const;

type AnyTool = (typeof TOOLS)[number];
type ProposingTool = Extract<AnyTool, { access: 'write' }>;

// The write tools are exactly the kinds of proposal the domain names (and stored rows and the API carry).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const proposalsAreWriteTools: Same<ProposingTool['name'], ActionKind> = true;
void proposalsAreWriteTools;

const WRITE_TOOLS = TOOLS.filter((t): t is ProposingTool => t.access === 'write');

/** The tools offered to the model. */
export const TOOL_SPECS: readonly ToolSpec[] = TOOLS.map(specOf);

/** Returns the tool of this name, or undefined for a name the model made up. */
export const toolNamed = (name: string): AnyTool | undefined => TOOLS.find((t) => t.name === name);

/** Returns the write tool of a kind of proposal; throws Error for a kind no tool has (a stored row from elsewhere: a bug). */
export function proposingTool(kind: ActionKind): ProposingTool {
  const tool = WRITE_TOOLS.find((t) => t.name === kind);
  if (!tool) throw new Error(`No write tool ${kind}.`);
  return tool;
}
