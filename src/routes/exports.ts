// CSV exports for the tools that send campaigns: a segment's customers as they match now, and an approved campaign's
// audience as it was frozen at approval. Both stream the matching customers in id order (customers/store/export.ts).
import { EXPORT_FIELDS, shownValue, type CustomerExport, type CustomerField, type ExportRow } from '../customers/index.ts';
import type { CampaignRepository } from '../db/campaigns.ts';
import type { SegmentRepository } from '../db/segments.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { compileConditions, type Condition } from '../domain/segments.ts';
import type { Context } from '../http/context.ts';
import { csvCell, streamCsv } from '../http/csv-download.ts';
import { operation, STREAMED } from '../http/operation.ts';
import { IdParams } from '../schemas/common.ts';
import { CustomersCsv, ExportQuery, type ExportFormat } from '../schemas/exports.ts';

/** The exported fields with their place in an ExportRow (after the id). */
const EXPORTED = EXPORT_FIELDS.map((field, i) => ({ ...field, at: i + 1 }));

/** listmonk's own columns of a subscriber import; every other field goes in its attributes. */
const LISTMONK_COLUMNS = ['email', 'name'] as const;
const [EMAIL_AT, NAME_AT] = LISTMONK_COLUMNS.map((key) => EXPORTED.find((f) => f.key === key)!.at) as [number, number];
const ATTRIBUTES = EXPORTED.filter((f) => !(LISTMONK_COLUMNS as readonly string[]).includes(f.key));

const HEADERS: Record<ExportFormat, readonly string[]> = {
  plain: EXPORTED.map((f) => f.exportHeader),
  listmonk: [...LISTMONK_COLUMNS, 'attributes'],
};

/** Returns one stored value as a CSV cell, as the API shows it: texts quoted as needed, numbers and dates as they are. */
function plainCell({ sqlType, kind }: CustomerField, value: string | number): string {
  return sqlType === 'TEXT' ? csvCell(value) : `${shownValue(kind, value)}`;
}

/** Returns the rows as CSV lines with one column per field, values as the API shows them. */
function plainLines(rows: readonly ExportRow[]): string {
  let text = '';
  for (const row of rows) {
    text += plainCell(EXPORTED[0]!, row[1]);
    for (let i = 1; i < EXPORTED.length; i++) text += `,${plainCell(EXPORTED[i]!, row[i + 1]!)}`;
    text += '\r\n';
  }
  return text;
}

/** Returns the rows as listmonk's subscriber import reads them: email, name, and the other fields as a JSON object. */
function listmonkLines(rows: readonly ExportRow[]): string {
  let text = '';
  for (const row of rows) {
    const attributes: Record<string, string | number> = {};
    for (const { exportHeader, kind, at } of ATTRIBUTES) attributes[exportHeader] = shownValue(kind, row[at]!);
    text += `${csvCell(row[EMAIL_AT]!)},${csvCell(row[NAME_AT]!)},${csvCell(JSON.stringify(attributes))}\r\n`;
  }
  return text;
}

const LINES: Record<ExportFormat, (rows: readonly ExportRow[]) => string> = { plain: plainLines, listmonk: listmonkLines };

/** Returns the name's words in lower-case ASCII joined by hyphens (at most 40 characters), or '' when none is left. */
function slug(name: string): string {
  const words = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
  return words.slice(0, 40).trim().replace(/ /g, '-');
}

const DOWNLOAD = {
  mediaType: 'text/csv',
  description:
    'UTF-8 without a byte order mark, RFC 4180 quoting, CRLF line ends, `Content-Disposition: attachment`. Header ' +
    `\`${HEADERS.plain.join(',')}\` (amount as a number, last activity ` +
    `as 2026-09-30T00:00:00.000Z), or with \`format=listmonk\` listmonk's \`${HEADERS.listmonk.join(',')}\`, attributes a JSON object of ` +
    'the other fields under those names. One line per matching customer in id order. The customers are those that exist when ' +
    'the download starts, each read as it is when its turn comes: one deleted before then is left out, one added after the ' +
    'start is not included, none comes twice. A cell starting with `=`, `+`, `-`, `@`, tab or carriage return gets a leading ' +
    "`'` so that a spreadsheet does not run it as a formula (an email such as `+a@x.io` then reads `'+a@x.io`).",
};

export interface ExportDeps {
  campaigns: Pick<CampaignRepository, 'getAudience' | 'getCampaign'>;
  segments: Pick<SegmentRepository, 'getSegment'>;
  customers: CustomerExport;
  clock: Clock;
}

/** Returns the export operations. */
export function exportOperations({ campaigns, segments, customers, clock }: ExportDeps) {
  /** Streams the customers matching the conditions now, in the format, as the named file. */
  const send = async (ctx: Context, file: string, conditions: readonly Condition[], format: ExportFormat) => {
    const lines = LINES[format];
    const chunks = customers.matchingCustomers(compileConditions(conditions, clock()));
    await streamCsv(ctx, `${file}${format === 'listmonk' ? '-listmonk' : ''}.csv`, HEADERS[format], (async function* () {
      for await (const rows of chunks) yield lines(rows);
    })());
    return STREAMED;
  };

  const segmentCustomers = operation({
    operationId: 'segments.customers',
    summary: "Download the segment's customers as CSV, matched by its conditions at the time of the download.",
    description:
      "The file is named `segment-<slug>-customers.csv` (`-customers-listmonk.csv` in listmonk's format), the slug being the segment's " +
      'name in lower-case ASCII letters and digits joined by hyphens (at most 40 characters), or its id when the name has none.',
    tag: 'segments',
    params: IdParams,
    query: ExportQuery,
    response: CustomersCsv,
    download: DOWNLOAD,
    problems: ['not_found'],
    async handle({ params, query, ctx }) {
      const segment = await segments.getSegment(params.id);
      return send(ctx, `segment-${slug(segment.name) || segment.id}-customers`, segment.conditions, query.format);
    },
  });

  const campaignAudience = operation({
    operationId: 'campaigns.audienceCsv',
    summary:
      "Download an approved or sent campaign's audience as CSV: the customers matching now the conditions frozen at approval, " +
      'whatever became of the segment since. 409 before approval.',
    description:
      "The file is named `campaign-<id>-audience.csv` (`-audience-listmonk.csv` in listmonk's format). The frozen conditions are " +
      'matched at the time of the download: a customer who matches them since approval is in, one deleted since is not; ' +
      '`GET /v1/campaigns/{id}/audience` tells the size at approval and now.',
    tag: 'campaigns',
    params: IdParams,
    query: ExportQuery,
    response: CustomersCsv,
    download: DOWNLOAD,
    problems: ['not_found', 'conflict'],
    async handle({ params, query, ctx }) {
      const frozen = await campaigns.getAudience(params.id);
      if (!frozen) {
        const { status } = await campaigns.getCampaign(params.id);
        const why =
          status === 'draft' || status === 'in_review'
            ? `The campaign is ${status}: its audience is frozen when it is approved, so only an approved or sent campaign has one to export.`
            : `The campaign was ${status} before this release froze audiences at approval, so it has none; reopen and approve it again to freeze one.`;
        throw new AppError('conflict', why);
      }
      return send(ctx, `campaign-${params.id}-audience`, frozen.conditions, query.format);
    },
  });

  return { segmentCustomers, campaignAudience };
}
