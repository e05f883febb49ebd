// Schemas of campaigns, their generation, edits, review moves, list query and trail.
import * as v from 'valibot';
import { CAMPAIGN_STATUSES, CHANNEL_LIMITS, CHANNELS, TONES, VERSION_SOURCES, type Channel as ChannelName } from '../domain/campaigns.ts';
import { Counter, MAX_COUNTER, nonBlankPattern, Page, PositiveParam, Timestamp, TrimmedText } from './common.ts';
import { StoredCondition } from './segments.ts';

const oneOf = <T extends readonly string[]>(values: T) => v.picklist(values, `Must be one of ${values.join(', ')}.`);

export const CampaignStatus = oneOf(CAMPAIGN_STATUSES);
export const Channel = oneOf(CHANNELS);
export const Tone = oneOf(TONES);

/** Control characters copy and briefs may not hold: all but tab and line feed. */
const COPY_CONTROLS = '\\u0000-\\u0008\\u000b-\\u001f\\u007f';

/** A brief may run over several lines: line breaks and tabs are allowed, other control characters are not. */
const Objective = v.pipe(
  v.string('Must be a string.'),
  v.trim(),
  v.minLength(10, 'Must be at least 10 characters long.'),
  v.maxLength(600, 'Must be at most 600 characters long.'),
  v.regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, 'Must not contain control characters other than line breaks.'),
  nonBlankPattern(COPY_CONTROLS),
  v.description('What the campaign should achieve: trimmed, 10 to 600 characters, line breaks allowed.'),
);

export const GenerateRequest = v.object({
  segmentId: v.pipe(v.string('Must be the id of a saved segment.'), v.minLength(1, 'Must be the id of a saved segment.')),
  objective: Objective,
  channel: Channel,
  tone: Tone,
});

/** Returns the limits of one part of the copy in words, per channel: `sms 60, email 120, push 60`. */
const limitsOf = (part: keyof (typeof CHANNEL_LIMITS)[ChannelName]) => CHANNELS.map((channel) => `${channel} ${CHANNEL_LIMITS[channel][part]}`).join(', ');

/** A part of the copy on edit: trimmed, non-empty, within the longest limit of any channel (the campaign's own is checked after). */
const EditedPart = (max: number, part: keyof (typeof CHANNEL_LIMITS)[ChannelName]) =>
  v.pipe(
    v.string('Must be a string.'),
    v.trim(),
    v.minLength(1, 'Must not be empty.'),
    v.maxLength(max, `Must be at most ${max} characters long.`),
    v.regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, 'Must not contain control characters other than line breaks.'),
    nonBlankPattern(COPY_CONTROLS),
    v.description(
      `Trimmed, not blank, line breaks allowed. At most this many characters for the campaign's channel: ${limitsOf(part)} ` +
        `(maxLength is the longest of them; a longer one than the channel allows is 400 naming the field).`,
    ),
  );

/** The edit of a draft; every part optional. */
export const CampaignChanges = v.pipe(
  v.object({
    title: v.optional(EditedPart(CHANNEL_LIMITS.email.title, 'title')),
    message: v.optional(EditedPart(CHANNEL_LIMITS.email.message, 'message')),
    callToAction: v.optional(EditedPart(CHANNEL_LIMITS.email.callToAction, 'callToAction')),
  }),
  v.description(
    `The parts of a draft to change, each checked against the limits of the campaign's channel (title / message / call to action): ` +
      CHANNELS.map((channel) => `${channel} ${CHANNEL_LIMITS[channel].title} / ${CHANNEL_LIMITS[channel].message} / ${CHANNEL_LIMITS[channel].callToAction}`).join(', ') +
      '.',
  ),
);

/** The same parts checked against one channel's limits. */
export function channelCopy(channel: ChannelName) {
  const limits = CHANNEL_LIMITS[channel];
  const within = (max: number) => v.pipe(v.string(), v.maxLength(max, `Must be at most ${max} characters long for ${channel}.`));
  return v.object({ title: within(limits.title), message: within(limits.message), callToAction: within(limits.callToAction) });
}

export const StatusChange = v.object({
  status: CampaignStatus,
  note: v.optional(TrimmedText(1, 1000)),
});

export const CampaignListQuery = v.object({
  status: v.optional(CampaignStatus),
  channel: v.optional(Channel),
  segmentId: v.optional(v.pipe(v.string(), v.minLength(1, 'Must not be empty.'), v.maxLength(200, 'Must be at most 200 characters.'))),
  page: PositiveParam(MAX_COUNTER, 1),
  limit: PositiveParam(200, 50),
});

export const Campaign = v.strictObject({
  id: v.string(),
  segmentId: v.string(),
  segmentName: v.string(),
  objective: v.string(),
  channel: Channel,
  tone: Tone,
  title: v.pipe(v.string(), v.minLength(1)),
  message: v.pipe(v.string(), v.minLength(1)),
  callToAction: v.pipe(v.string(), v.minLength(1)),
  status: CampaignStatus,
  model: v.pipe(v.string(), v.description('Which generator wrote it: `local`, or the provider\'s model name.')),
  createdBy: v.pipe(v.string(), v.description('The id of the user who generated it.')),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const CampaignAudience = v.strictObject({
  conditions: v.pipe(v.array(StoredCondition), v.description("The segment's conditions when the campaign was approved; later edits of the segment do not change them.")),
  description: v.pipe(v.string(), v.description('The conditions in words: "customers in Germany with at least 5 purchases".')),
  sizeAtApproval: v.pipe(Counter, v.description('How many customers matched at approval.')),
  approvedAt: Timestamp,
  sizeNow: v.pipe(Counter, v.description('How many customers match the frozen conditions now.')),
});

export const CampaignPage = Page(Campaign);

export const CampaignEventList = v.array(
  v.object({
    from: v.nullable(CampaignStatus),
    to: CampaignStatus,
    note: v.nullable(v.string()),
    userId: v.string(),
    userName: v.nullable(v.string()),
    at: Timestamp,
  }),
);

const Instruction = v.pipe(
  TrimmedText(3, 300),
  v.description('What to change, in plain words ("shorter", "more urgent", "mention free delivery"): trimmed, 3 to 300 characters.'),
);

export const ReviseRequest = v.object({ instruction: Instruction });

export const VariantsRequest = v.object({
  count: v.pipe(v.number('Must be 2 or 3.'), v.integer('Must be 2 or 3.'), v.minValue(2, 'Must be 2 or 3.'), v.maxValue(3, 'Must be 2 or 3.'), v.description('How many alternatives: 2 or 3.')),
  instruction: v.optional(Instruction),
});

export const VersionParams = v.object({
  id: v.pipe(v.string(), v.minLength(1)),
  version: v.pipe(v.string(), v.regex(/^[1-9][0-9]{0,8}$/, 'Must be a version number: 1, 2, 3, ...'), v.description('The version number, from 1.')),
});

export const CampaignVersion = v.strictObject({
  version: v.pipe(v.number(), v.integer(), v.minValue(1)),
  title: v.pipe(v.string(), v.minLength(1)),
  message: v.pipe(v.string(), v.minLength(1)),
  callToAction: v.pipe(v.string(), v.minLength(1)),
  source: v.pipe(
    v.picklist(VERSION_SOURCES),
    v.description('generated (the first draft), revised, edited (PATCH), variant (an alternative, not made current), restored.'),
  ),
  instruction: v.optional(v.pipe(v.string(), v.description('What the marketer asked for (revised, variant).'))),
  model: v.optional(v.pipe(v.string(), v.description('Which generator wrote it (generated, revised, variant, restored).'))),
  createdBy: v.pipe(v.string(), v.description('The id of the user who asked for it.')),
  createdAt: Timestamp,
});

export const CampaignVersionList = v.array(CampaignVersion);

export const VariantList = v.strictObject({ variants: v.array(CampaignVersion) });
