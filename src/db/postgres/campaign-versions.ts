// The versions of a campaign's copy on PostgreSQL: the same rows as ../campaign-versions.ts. The next number is
// max(version) + 1, read by the INSERT itself; under READ COMMITTED two appends at once would read the same max, so
// the campaign repository locks the campaign's row before it appends (./campaigns.ts): appends to one campaign queue,
// and each reads the max its predecessor committed.
import type { CampaignVersion, NewVersion, VersionRow } from '../campaign-versions.ts';
import { toVersion } from '../campaign-versions.ts';
import type { PgSql } from '../pg-engine.ts';

/** Appends the next version of the campaign and returns it. Call it in a transaction that holds the campaign's row lock. */
export async function appendVersion(tx: PgSql, campaignId: string, version: NewVersion, now: Date): Promise<CampaignVersion> {
  const [row] = await tx<VersionRow[]>`
    INSERT INTO campaign_versions (campaign_id, version, title, message, call_to_action, source, instruction, model, created_by, created_at)
    VALUES (${campaignId}, (SELECT coalesce(max(version), 0) + 1 FROM campaign_versions WHERE campaign_id = ${campaignId}),
            ${version.title}, ${version.message}, ${version.callToAction}, ${version.source}, ${version.instruction ?? null},
            ${version.model ?? null}, ${version.createdBy}, ${now.getTime()})
    RETURNING *`;
  return toVersion(row!);
}

/** Resolves to the campaign's versions, oldest first (none for an unknown campaign). */
export async function listVersions(sql: PgSql, campaignId: string): Promise<CampaignVersion[]> {
  const rows = await sql<VersionRow[]>`SELECT * FROM campaign_versions WHERE campaign_id = ${campaignId} ORDER BY version`;
  return rows.map(toVersion);
}

/** Resolves to one version, or undefined. */
export async function findVersion(sql: PgSql, campaignId: string, version: number): Promise<CampaignVersion | undefined> {
  const [row] = await sql<VersionRow[]>`SELECT * FROM campaign_versions WHERE campaign_id = ${campaignId} AND version = ${version}`;
  return row && toVersion(row);
}
