// campaigns.revise, .variants, .versions, .restore: a draft rewritten on instruction, alternatives beside it, and
// every copy it has had.
import type { AudienceIndex } from '../customers/index.ts';
import type { Campaign, CampaignRepository } from '../db/campaigns.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Rewrite } from '../campaigns/revise.ts';
import { copyVariants, reviseCopy } from '../campaigns/revise.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { compileConditions, describeAudience } from '../domain/segments.ts';
import { operation } from '../http/operation.ts';
import type { LanguageModel } from '../llm/model.ts';
import { IdParams } from '../schemas/common.ts';
import { Campaign as CampaignSchema, CampaignVersionList, ReviseRequest, VariantList, VariantsRequest, VersionParams } from '../schemas/campaigns.ts';

export interface CampaignVersionDeps {
  campaigns: CampaignRepository;
  segments: SegmentRepository;
  audience: AudienceIndex;
  model: LanguageModel;
  clock: Clock;
}

/** Returns the operations on a campaign's versions. */
export function campaignVersionOperations({ campaigns, segments, audience, model, clock }: CampaignVersionDeps) {
  /** The draft and what a rewrite of it starts from; `conflict` before any model call when it is not a draft. */
  const rewriteOf = async (id: string, what: string): Promise<{ campaign: Campaign; rewrite: Rewrite }> => {
    const campaign = await campaigns.getCampaign(id);
    if (campaign.status !== 'draft') throw new AppError('conflict', `Only drafts can be ${what}; this campaign is ${campaign.status}.`);
    const segment = await segments.findSegment(campaign.segmentId);
    const brief = {
      // The audience as it is now; a deleted segment is named as it was.
      audience: segment ? describeAudience(segment.conditions) : `customers of the former segment "${campaign.segmentName}"`,
      audienceSize: segment ? await audience.count(compileConditions(segment.conditions, clock())) : 0,
      objective: campaign.objective,
      channel: campaign.channel,
      tone: campaign.tone,
    };
    return { campaign, rewrite: { brief, copy: { title: campaign.title, message: campaign.message, callToAction: campaign.callToAction } } };
  };

  const revise = operation({
    operationId: 'campaigns.revise',
    summary:
      'Rewrite a draft as an instruction says ("shorter", "more urgent", "mention free delivery"), within its channel\'s limits; the new copy becomes current and is recorded as a version. Send Idempotency-Key to make a retry safe.',
    tag: 'campaigns',
    params: IdParams,
    body: ReviseRequest,
    response: CampaignSchema,
    problems: ['not_found', 'conflict', 'llm_error', 'llm_unavailable'],
    async handle({ params, body, user, ctx }) {
      const { rewrite } = await rewriteOf(params.id, 'revised');
      const copy = await reviseCopy(model, rewrite, body.instruction, ctx.signal);
      return await campaigns.reviseDraft(params.id, copy, { instruction: body.instruction, model: model.model, userId: user.id }, clock());
    },
  });

  const variants = operation({
    operationId: 'campaigns.variants',
    summary:
      'Write 2 or 3 alternatives to a draft in one model call, stored as versions with source `variant` and not made current (restore one to use it). Send Idempotency-Key to make a retry safe.',
    tag: 'campaigns',
    params: IdParams,
    body: VariantsRequest,
    response: VariantList,
    problems: ['not_found', 'conflict', 'llm_error', 'llm_unavailable'],
    async handle({ params, body, user, ctx }) {
      const { rewrite } = await rewriteOf(params.id, 'given variants');
      const copies = await copyVariants(model, rewrite, body.count, body.instruction, ctx.signal);
      return { variants: await campaigns.addVariants(params.id, copies, { instruction: body.instruction ?? null, model: model.model, userId: user.id }, clock()) };
    },
  });

  const versions = operation({
    operationId: 'campaigns.versions',
    summary: "Every copy the campaign has had, oldest first: generated, revised, edited, variants and restored, with who asked and the instruction.",
    tag: 'campaigns',
    params: IdParams,
    response: CampaignVersionList,
    problems: ['not_found'],
    async handle({ params }) {
      return await campaigns.listVersions(params.id);
    },
  });

  const restore = operation({
    operationId: 'campaigns.restore',
    summary: "Make an earlier version's copy (or a variant) a draft's current copy again, recorded as a new version with source `restored`.",
    tag: 'campaigns',
    params: VersionParams,
    response: CampaignSchema,
    problems: ['not_found', 'conflict'],
    async handle({ params, user }) {
      return await campaigns.restoreVersion(params.id, Number(params.version), user.id, clock());
    },
  });

  return { revise, variants, versions, restore };
}
