// Schemas of segment conditions, segments and their requests.
import * as v from 'valibot';
import { countryKey, CUSTOMER_STATUSES, type CustomerStatus } from '../domain/customers.ts';
import { CHOICE_OPERATORS, NUMERIC_FIELDS, NUMERIC_OPERATORS } from '../domain/segments.ts';
import { Counter, nonBlankPattern, Timestamp, TrimmedText } from './common.ts';

const FIELDS = ['country', 'status', ...NUMERIC_FIELDS];

const CountryName = v.pipe(
  v.string('Must be a country name.'),
  v.trim(),
  v.minLength(1, 'Must not be empty.'),
  v.maxLength(80, 'Must be at most 80 characters.'),
  nonBlankPattern(),
  v.description('A country name, compared trimmed and ignoring case.'),
);

const Status = v.picklist(CUSTOMER_STATUSES, `Must be one of ${CUSTOMER_STATUSES.join(', ')}, in lower case.`);

/**
 * An array whose failing item is reported at the array itself ("Item 2: Must not be empty." on `conditions.N.value`,
 * the field product.md names), not at `conditions.N.value.1`. It is valibot's array schema with its run wrapped,
 * so the JSON Schema of the OpenAPI document and of the model still describes each item.
 */
function listOf<T extends v.GenericSchema>(item: T, message: string): v.ArraySchema<T, string> {
  const array = v.array(item, message);
  const run: (typeof array)['~run'] = (dataset, config) => {
    const out = array['~run'](dataset, config);
    for (const issue of (out.issues ?? []) as { path?: v.IssuePathItem[]; message: string }[]) {
      const at = issue.path?.[0]?.key;
      if (typeof at === 'number') issue.message = `Item ${at + 1}: ${issue.message}`;
      issue.path = undefined;
    }
    return out;
  };
  // Requests are checked through `~run` (v.safeParse); the Standard Schema interface, unused here, keeps item paths.
  return { ...array, '~run': run };
}

/** Whether no two items are the same once `key` has read them. */
const distinct = <T>(key: (item: T) => string) => (items: T[]) => new Set(items.map(key)).size === items.length;

const choices = (field: string) => `${field} takes one of ${CHOICE_OPERATORS.join(', ')}.`;

export const CountryCondition = v.variant('operator', [
  v.object({
    field: v.literal('country'),
    operator: v.picklist(['eq', 'neq']),
    value: v.pipe(CountryName, v.description('A country name, compared trimmed and ignoring case: `eq` is that country, `neq` any other.')),
  }),
  v.object({
    field: v.literal('country'),
    operator: v.literal('in'),
    value: v.pipe(
      listOf(CountryName, 'Must be an array of country names.'),
      v.minLength(1, 'Must hold at least 1 country.'),
      v.maxLength(50, 'Must hold at most 50 countries.'),
      v.check(distinct(countryKey), 'Must not name a country twice (ignoring case).'),
      v.description('1 to 50 distinct country names, each compared trimmed and ignoring case: the customer is in one of them.'),
    ),
  }),
]);

export const StatusCondition = v.variant('operator', [
  v.object({
    field: v.literal('status'),
    operator: v.picklist(['eq', 'neq']),
    value: v.pipe(Status, v.description('A customer status, in lower case: `eq` is that status, `neq` any other.')),
  }),
  v.object({
    field: v.literal('status'),
    operator: v.literal('in'),
    value: v.pipe(
      listOf(Status, `Must be an array of statuses (${CUSTOMER_STATUSES.join(', ')}).`),
      v.minLength(1, 'Must hold at least 1 status.'),
      v.maxLength(3, 'Must hold at most 3 statuses.'),
      v.check(distinct((s: CustomerStatus) => s), 'Must not name a status twice.'),
      v.description('1 to 3 distinct statuses, in lower case: the customer has one of them.'),
    ),
  }),
]);

export const NumericCondition = v.object({
  field: v.picklist(NUMERIC_FIELDS),
  operator: v.picklist(NUMERIC_OPERATORS, `Numeric fields take one of ${NUMERIC_OPERATORS.join(', ')}.`),
  value: v.pipe(v.number('Must be a number.'), v.finite('Must be a finite number.')),
});

/** One condition: a country or status (equal, not equal, one of a list), or a comparison of a numeric field with a number. */
export const SegmentCondition = v.variant('field', [CountryCondition, StatusCondition, NumericCondition], (issue) =>
  // The variant names the key it could not match: the field, or the operator of a known field.
  issue.path?.[0]?.key === 'operator' ? choices(String((issue.path[0].input as { field: unknown }).field)) : `Must be one of ${FIELDS.join(', ')}.`,
);

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
  operator: v.picklist([...CHOICE_OPERATORS, ...NUMERIC_OPERATORS]),
  value: v.union([v.string(), v.number(), v.array(v.string())]),
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
