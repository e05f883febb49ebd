// Schemas of the CSV exports of a segment's customers and a campaign's frozen audience.
import * as v from 'valibot';

/** `plain`: one column per field. `listmonk`: listmonk's subscriber import, `email,name,attributes`. */
export const EXPORT_FORMATS = ['plain', 'listmonk'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const ExportQuery = v.object({
  format: v.optional(
    v.pipe(
      v.picklist(EXPORT_FORMATS, `Must be one of ${EXPORT_FORMATS.join(', ')}.`),
      v.description(
        '`plain` (the default): `email,name,country,status,total_amount_spent,total_transactions,last_activity_date`. ' +
          "`listmonk`: listmonk's subscriber import, `email,name,attributes`, attributes a JSON object of the other fields.",
      ),
    ),
    'plain',
  ),
});

/** The body of a customers export, for the route table; the document describes the file by its media type. */
export const CustomersCsv = v.pipe(v.string(), v.description('email,name,country,status,total_amount_spent,total_transactions,last_activity_date'));
