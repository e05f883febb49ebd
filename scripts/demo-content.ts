// The demo's campaigns and assistant conversation, written by the local generator and moved through review by the
// demo users, so every screen of the console opens on something real.
import type { User } from '../src/db/users.ts';
import type { SqliteEngine } from '../src/db/engine.ts';
import { createCampaignRepository } from '../src/db/campaigns.ts';
import { createChatRepository } from '../src/db/chat.ts';
import { openCustomers } from '../src/customers/index.ts';
import type { Segment } from '../src/db/segments.ts';
import { createSegmentRepository } from '../src/db/segments.ts';
import { draftCopy } from '../src/campaigns/draft.ts';
import { groundingReader } from '../src/chat/grounding.ts';
import { localReply } from '../src/chat/local-reply.ts';
import type { CampaignStatus, Channel, Tone } from '../src/domain/campaigns.ts';
import { describeAudience } from '../src/domain/segments.ts';
import { createLocalModel } from '../src/llm/local.ts';
import { realSleep } from '../src/llm/sleep.ts';

const HOUR = 3_600_000;

interface DemoCampaign {
  /** The name of a segment demo.ts saved. */
  segment: string;
  objective: string;
  channel: Channel;
  tone: Tone;
  daysAgo: number;
  /** Who drafted it: 0 admin, 1 lead, 2 marketer. */
  by: number;
  moves: [to: CampaignStatus, by: number, note: string | null][];
}

const CAMPAIGNS: DemoCampaign[] = [
  {
    segment: 'Lapsing regulars',
    objective: 'Last call for regulars who have gone quiet: the weekend flash sale ends Sunday at midnight',
    channel: 'sms',
    tone: 'urgent',
    daysAgo: 12,
    by: 1,
    moves: [['in_review', 1, null], ['draft', 0, 'Name the end date in the first line, please.'], ['in_review', 1, 'End date up front now.'], ['approved', 0, null], ['sent', 1, 'Sent Friday at 9:00.']],
  },
  {
    segment: 'New this month',
    objective: 'Welcome new customers and point them to free shipping on their second order',
    channel: 'push',
    tone: 'friendly',
    daysAgo: 6,
    by: 2,
    moves: [['in_review', 2, null], ['approved', 1, 'Lovely. Schedule it for Tuesday morning.']],
  },
  {
    segment: 'German big spenders',
    objective: 'Invite our German big spenders to a private preview of the autumn collection before anyone else',
    channel: 'email',
    tone: 'professional',
    daysAgo: 2,
    by: 2,
    moves: [['in_review', 2, 'Ready for a look.']],
  },
  {
    segment: 'German big spenders',
    objective: 'Thank our best German customers with early access to the new loyalty programme',
    channel: 'push',
    tone: 'promotional',
    daysAgo: 3,
    by: 1,
    moves: [['in_review', 1, null], ['draft', 0, 'A little less salesy for our best customers.']],
  },
  {
    segment: 'Lapsing regulars',
    objective: 'Win back lapsing regulars with 15% off their next order this month',
    channel: 'email',
    tone: 'friendly',
    daysAgo: 1,
    by: 2,
    moves: [],
  },
];

const QUESTIONS = ['How healthy is our customer base right now?', 'Which segment should we win back first?'];

/** Adds the demo campaigns (with their review trails) and one assistant conversation for the lead. */
export async function addDemoContent(engine: SqliteEngine, users: readonly User[], now: Date): Promise<void> {
  const segments = createSegmentRepository(engine);
  const campaigns = createCampaignRepository(engine);
  const saved = new Map<string, Segment>((await segments.listSegments()).map((s) => [s.name, s]));
  const writer = createLocalModel({ sleep: realSleep });

  for (const plan of CAMPAIGNS) {
    const segment = saved.get(plan.segment);
    if (!segment) throw new Error(`The demo has no segment named ${plan.segment}.`);
    const brief = { audience: describeAudience(segment.conditions), audienceSize: segment.matchCount, objective: plan.objective, channel: plan.channel, tone: plan.tone };
    const copy = await draftCopy(writer, brief, new AbortController().signal);
    let at = now.getTime() - plan.daysAgo * 24 * HOUR;
    const campaign = await campaigns.insertCampaign(
      { ...copy, segmentId: segment.id, segmentName: segment.name, objective: plan.objective, channel: plan.channel, tone: plan.tone, model: writer.model, createdBy: users[plan.by]!.id },
      new Date(at),
    );
    let from: CampaignStatus = 'draft';
    for (const [to, by, note] of plan.moves) {
      at += 3 * HOUR;
      // Approval freezes the segment as it is: its conditions and the size counted when it was saved.
      const audience = to === 'approved' ? { conditions: segment.conditions, description: brief.audience, size: segment.matchCount } : undefined;
      await campaigns.moveCampaign(campaign.id, { from, to, note, userId: users[by]!.id, audience }, new Date(at));
      from = to;
    }
  }

  const lead = users[1]!;
  const chats = createChatRepository(engine);
  const thread = await chats.createThread(lead.id, undefined, new Date(now.getTime() - 2 * HOUR));
  const customers = openCustomers(engine);
  const grounding = await groundingReader(customers.store, segments, () => customers.feed.generation())(now);
  for (const [i, question] of QUESTIONS.entries()) {
    await chats.addMessages(
      lead.id,
      thread.id,
      [
        { role: 'user', content: question },
        { role: 'assistant', content: localReply(grounding, question), model: writer.model },
      ],
      new Date(now.getTime() - (2 - i) * HOUR + 60_000),
    );
  }
}
