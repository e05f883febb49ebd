// Schemas of segment conditions, segments and their requests.
import * as v from 'valibot';
import { NUMERIC_FIELDS, NUMERIC_OPERATORS } from '../domain/segments.ts';
import { Counter, nonBlankPattern, Timestamp, TrimmedText } from './common.ts';

const FIELDS = ['country', ...NUMERIC_FIELDS];

export const CountryCondition = v.object({
  field: v.literal('country'),
  operator: v.literal('eq', 'country takes the operator eq.'),
  value: v.pipe(
    v.string('Must be a country name.'),
    v.trim(),
    v.minLength(1, 'Must not be empty.'),
    v.maxLength(80, 'Must be at most 80 characters.'),
    nonBlankPattern(),
    v.description('A country name, compared trimmed and ignoring case.'),
  ),
});

export const NumericCondition = v.object({
  field: v.picklist(NUMERIC_FIELDS),
  operator: v.picklist(NUMERIC_OPERATORS, `Numeric fields take one of ${NUMERIC_OPERATORS.join(', ')}.`),
  value: v.pipe(v.number('Must be a number.'), v.finite('Must be a finite number.')),
});

/** One condition: a country equality, or a comparison of a numeric field with a number. */
export const SegmentCondition = v.variant('field', [CountryCondition, NumericCondition], `Must be one of ${FIELDS.join(', ')}.`);

export const Conditions = v.pipe(
  v.array(SegmentCondition, 'Must be an array of conditions.'),
  v.minLength(1, 'Must hold at least 1 condition.'),
  v.maxLength(10, 'Must hold at most 10 conditions.'),
);

export const PreviewRequest = v.object({ conditions: Conditions });

export const Preview = v.object({ matchCount: Counter });

const SegmentName = TrimmedText(2, 80);

export const SegmentRequest = v.object({ name: SegmentName, conditions: Conditions });

export const SegmentChanges = v.object({ name: v.optional(SegmentName), conditions: v.optional(Conditions) });

export const StoredCondition = v.object({
  id: v.string(),
  field: v.picklist(FIELDS),
  operator: v.picklist(['eq', ...NUMERIC_OPERATORS]),
  value: v.union([v.string(), v.number()]),
});

export const Segment = v.object({
  id: v.string(),
  name: v.string(),
  conditions: v.array(StoredCondition),
  matchCount: Counter,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const SegmentList = v.array(Segment);

export const SegmentDraftRequest = v.object({
  description: v.pipe(
    TrimmedText(3, 500),
    v.description('The audience in plain words: "customers in Germany who spent over $500 and haven\'t bought in 3 months". Trimmed, 3 to 500 characters.'),
  ),
});

export const SegmentDraft = v.strictObject({
  name: v.pipe(v.string(), v.description('A name to save it under, from the description.')),
  conditions: v.pipe(v.array(SegmentCondition), v.description('Conditions a save accepts as they are, combined with AND.')),
  description: v.pipe(v.string(), v.description('The conditions in words, to check them: "customers in Germany who spent more than 500 in total".')),
  size: v.pipe(Counter, v.description('How many customers match now: the count a preview of the same conditions gives.')),
  unmatched: v.pipe(v.array(v.string()), v.description('Phrases of the description that could not be used, word for word; empty when everything was.')),
});
