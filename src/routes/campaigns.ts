// campaigns.*: generation through the language model, read, edit, delete, and the review workflow.
import type { AudienceIndex } from '../customers/index.ts';
import type { CampaignRepository } from '../db/campaigns.ts';
import type { SegmentRepository } from '../db/segments.ts';
import { draftCopy } from '../campaigns/draft.ts';
import { MOVES, isMove, mayMove } from '../domain/campaigns.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError, invalidField } from '../domain/errors.ts';
import { compileConditions, describeAudience } from '../domain/segments.ts';
import { operation } from '../http/operation.ts';
import { parseInput } from '../http/validate.ts';
import type { LanguageModel } from '../llm/model.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import {
  Campaign,
  CampaignAudience,
  CampaignChanges,
  CampaignEventList,
  CampaignListQuery,
  CampaignPage,
  channelCopy,
  GenerateRequest,
  StatusChange,
} from '../schemas/campaigns.ts';

export interface CampaignDeps {
  campaigns: CampaignRepository;
  segments: SegmentRepository;
  audience: AudienceIndex;
  model: LanguageModel;
  clock: Clock;
}

/** Returns the campaign operations. */
export function campaignOperations({ campaigns, segments, audience, model, clock }: CampaignDeps) {
  const generate = operation({
    operationId: 'campaigns.generate',
    summary:
      'Draft a campaign for a saved segment with the language model (or the local generator). Send Idempotency-Key to make a retry safe.',
    tag: 'campaigns',
    body: GenerateRequest,
    response: Campaign,
    problems: ['llm_error', 'llm_unavailable'],
    async handle({ body, user, ctx }) {
      const segment = await segments.findSegment(body.segmentId);
      if (!segment) throw invalidField('segmentId', 'No saved segment has this id.');
      const audienceSize = await audience.count(compileConditions(segment.conditions, clock()));
      const brief = { audience: describeAudience(segment.conditions), audienceSize, objective: body.objective, channel: body.channel, tone: body.tone };
      const copy = await draftCopy(model, brief, ctx.signal);
      return await campaigns.insertCampaign(
        { ...copy, segmentId: segment.id, segmentName: segment.name, objective: body.objective, channel: body.channel, tone: body.tone, model: model.model, createdBy: user.id },
        clock(),
      );
    },
  });

  const list = operation({
    operationId: 'campaigns.list',
    summary: 'Campaigns, newest first, filtered by status, channel and segment, in pages.',
    tag: 'campaigns',
    query: CampaignListQuery,
    response: CampaignPage,
    async handle({ query }) {
      const { page, limit, ...filter } = query;
      return { ...(await campaigns.listCampaigns(filter, page, limit)), page, limit };
    },
  });

  const get = operation({
    operationId: 'campaigns.get',
    summary: 'One campaign.',
    tag: 'campaigns',
    params: IdParams,
    response: Campaign,
    problems: ['not_found'],
    async handle({ params }) {
      return await campaigns.getCampaign(params.id);
    },
  });

  const update = operation({
    operationId: 'campaigns.update',
    summary: "Edit a draft's title, message or call to action, within its channel's limits.",
    tag: 'campaigns',
    params: IdParams,
    body: CampaignChanges,
    response: Campaign,
    problems: ['not_found', 'conflict'],
    async handle({ params, body, user }) {
      const current = await campaigns.getCampaign(params.id);
      if (current.status !== 'draft') throw new AppError('conflict', `Only drafts can be edited; this campaign is ${current.status}.`);
      const copy = {
        title: body.title ?? current.title,
        message: body.message ?? current.message,
        callToAction: body.callToAction ?? current.callToAction,
      };
      parseInput(channelCopy(current.channel), copy, 'body');
      return await campaigns.editDraft(params.id, copy, user.id, clock());
    },
  });

  const remove = operation({
    operationId: 'campaigns.delete',
    summary: 'Delete a draft (other statuses are kept for the record).',
    tag: 'campaigns',
    params: IdParams,
    response: NullBody,
    problems: ['not_found', 'conflict'],
    async handle({ params }) {
      await campaigns.deleteDraft(params.id);
      return null;
    },
  });

  const setStatus = operation({
    operationId: 'campaigns.setStatus',
    summary:
      'Move a campaign through review: draft → in_review → approved → sent; in_review → draft (request changes); approved → draft (reopen). Approving, requesting changes and marking sent need marketing_lead or admin.',
    tag: 'campaigns',
    params: IdParams,
    body: StatusChange,
    response: Campaign,
    problems: ['not_found', 'forbidden', 'conflict'],
    async handle({ params, body, user }) {
      const current = await campaigns.getCampaign(params.id);
      const from = current.status;
      const to = body.status;
      if (!mayMove(user.role, from, to)) throw new AppError('forbidden', `Your role cannot move a campaign from ${from} to ${to}.`);
      if (from === to) return current;
      if (!isMove(from, to)) {
        const allowed = MOVES[from];
        const moves = allowed.length ? `it can move to ${allowed.join(' or ')}` : 'it can move nowhere';
        throw new AppError('conflict', `The campaign is ${from}: ${moves}, not to ${to}.`);
      }
      const audienceToFreeze = to === 'approved' ? await segmentAudience(current.segmentId, current.segmentName) : undefined;
      return await campaigns.moveCampaign(params.id, { from, to, note: body.note ?? null, userId: user.id, audience: audienceToFreeze }, clock());
    },
  });

  /** The segment's conditions and live size, frozen when a campaign for it is approved; `conflict` when it is gone. */
  const segmentAudience = async (segmentId: string, segmentName: string) => {
    const segment = await segments.findSegment(segmentId);
    if (!segment) throw new AppError('conflict', `The segment "${segmentName}" was deleted, so there is no audience to approve; draft the campaign again for a saved segment.`);
    const size = await audience.count(compileConditions(segment.conditions, clock()));
    return { conditions: segment.conditions, description: describeAudience(segment.conditions), size };
  };

  const frozenAudience = operation({
    operationId: 'campaigns.audience',
    summary:
      'The audience frozen when the campaign was approved (the segment\'s conditions, in words, and their size then), with its size now. 409 before approval.',
    tag: 'campaigns',
    params: IdParams,
    response: CampaignAudience,
    problems: ['not_found', 'conflict'],
    async handle({ params }) {
      const frozen = await campaigns.getAudience(params.id);
      if (!frozen) {
        const { status } = await campaigns.getCampaign(params.id);
        const why =
          status === 'draft' || status === 'in_review'
            ? `The campaign is ${status}: its audience is frozen when it is approved.`
            : `The campaign was ${status === 'sent' ? 'sent' : 'approved'} before this release froze audiences at approval, so it has none; reopen and approve it again to freeze one.`;
        throw new AppError('conflict', why);
      }
      const sizeNow = await audience.count(compileConditions(frozen.conditions, clock()));
      return { ...frozen, sizeNow };
    },
  });

  const events = operation({
    operationId: 'campaigns.events',
    summary: 'Who moved the campaign when, from which status to which, with their note; oldest first, starting with its creation.',
    tag: 'campaigns',
    params: IdParams,
    response: CampaignEventList,
    problems: ['not_found'],
    async handle({ params }) {
      return await campaigns.listEvents(params.id);
    },
  });

  return { generate, list, get, update, remove, setStatus, events, audience: frozenAudience };
}
