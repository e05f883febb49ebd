// Segments: saved audiences, counted by the one audience index.
import type { AudienceIndex, CustomerRepository } from '../customers/index.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Clock } from '../domain/clock.ts';
import { compileConditions, describeAudience, type Condition } from '../domain/segments.ts';
import type { LanguageModel } from '../llm/model.ts';
import { draftSegment } from '../segments/draft.ts';
import { operation } from '../http/operation.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import { Preview, PreviewRequest, Segment, SegmentChanges, SegmentDraft, SegmentDraftRequest, SegmentList, SegmentRequest } from '../schemas/segments.ts';

export interface SegmentDeps {
  segments: SegmentRepository;
  audience: AudienceIndex;
  customers: CustomerRepository;
  model: LanguageModel;
  clock: Clock;
}

/** Returns the segment operations. */
export function segmentOperations({ segments, audience, customers, model, clock }: SegmentDeps) {
  /** The one way any segment count is made: preview, save, update and get all come here. */
  const countMatches = (conditions: readonly Condition[]) => {
    const now = clock();
    // The instant the bounds were compiled at: counts are remembered relative to it.
    return audience.count(compileConditions(conditions, now), now.getTime());
  };

  const list = operation({
    operationId: 'segments.list',
    summary: 'Saved segments, newest first, with the audience size stored when each was last saved or read.',
    tag: 'segments',
    response: SegmentList,
    handle() {
      return segments.listSegments();
    },
  });

  const preview = operation({
    operationId: 'segments.preview',
    summary: 'Count the customers matching unsaved conditions (combined with AND).',
    tag: 'segments',
    body: PreviewRequest,
    response: Preview,
    async handle({ body }) {
      return { matchCount: await countMatches(body.conditions) };
    },
  });

  const draft = operation({
    operationId: 'segments.draft',
    summary:
      'Turn a description in plain words into conditions a save accepts, with them in words, the live count and the phrases that could not be used. Stores nothing. Uses the model when one is configured, else the local parser of plain English.',
    tag: 'segments',
    body: SegmentDraftRequest,
    response: SegmentDraft,
    problems: ['llm_error', 'llm_unavailable'],
    async handle({ body, ctx }) {
      const found = await draftSegment(model, body.description, await customers.countryNames(), ctx.signal);
      return { ...found, description: describeAudience(found.conditions), size: await countMatches(found.conditions) };
    },
  });

  const create = operation({
    operationId: 'segments.create',
    summary: 'Save a segment; its audience size is counted and stored.',
    tag: 'segments',
    body: SegmentRequest,
    response: Segment,
    async handle({ body, user }) {
      const matchCount = await countMatches(body.conditions);
      return segments.insertSegment({ name: body.name, conditions: body.conditions, matchCount, createdBy: user.id }, clock());
    },
  });

  const get = operation({
    operationId: 'segments.get',
    summary: 'One segment, recounted: the live audience size is returned and stored.',
    tag: 'segments',
    params: IdParams,
    response: Segment,
    problems: ['not_found'],
    async handle({ params }) {
      const segment = await segments.getSegment(params.id);
      const matchCount = await countMatches(segment.conditions);
      await segments.storeMatchCount(segment.id, matchCount);
      return { ...segment, matchCount };
    },
  });

  const update = operation({
    operationId: 'segments.update',
    summary: 'Rename a segment and/or replace its conditions; the audience is recounted.',
    tag: 'segments',
    params: IdParams,
    body: SegmentChanges,
    response: Segment,
    problems: ['not_found'],
    async handle({ params, body }) {
      const conditions = body.conditions ?? (await segments.getSegment(params.id)).conditions;
      const matchCount = await countMatches(conditions);
      return segments.updateSegment(params.id, { name: body.name, conditions: body.conditions, matchCount }, clock());
    },
  });

  const remove = operation({
    operationId: 'segments.delete',
    summary: 'Delete a segment.',
    tag: 'segments',
    params: IdParams,
    response: NullBody,
    problems: ['not_found'],
    async handle({ params }) {
      await segments.deleteSegment(params.id);
      return null;
    },
  });

  return { list, preview, draft, create, get, update, remove };
}
