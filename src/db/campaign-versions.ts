// SQL for the versions of a campaign's copy: every copy it has had, numbered from 1. The campaign repository writes
// them inside its own transactions (src/db/campaigns.ts); this file only reads and appends rows.
import type { CampaignCopy, VersionSource } from '../domain/campaigns.ts';
import type { Db } from './database.ts';


/** One version as the API shows it; `instruction` and `model` only where they apply. */
export interface CampaignVersion extends CampaignCopy {
  version: number;
  source: VersionSource;
  instruction?: string;
  model?: string;
  createdBy: string;
  createdAt: string;
}

/** A version to append: its copy, where it came from, and who asked. */
export interface NewVersion extends CampaignCopy {
  source: VersionSource;
  instruction?: string | null;
  model?: string | null;
  createdBy: string;
}

interface VersionRow {
  version: number;
  title: string;
  message: string;
  call_to_action: string;
  source: VersionSource;
  instruction: string | null;
  model: string | null;
  created_by: string;
  created_at: number;
}

function toVersion(row: VersionRow): CampaignVersion {
  return {
    version: row.version,
    title: row.title,
    message: row.message,
    callToAction: row.call_to_action,
    source: row.source,
    ...(row.instruction === null ? {} : { instruction: row.instruction }),
    ...(row.model === null ? {} : { model: row.model }),
    createdBy: row.created_by,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

export type CampaignVersionStatements = ReturnType<typeof createCampaignVersionStatements>;

/** Returns the version queries, prepared once; `append` must run inside the transaction of the change it records. */
export function createCampaignVersionStatements(db: Db) {
  const all = db.prepare<[string], VersionRow>('SELECT * FROM campaign_versions WHERE campaign_id = ? ORDER BY version');
  const one = db.prepare<[string, number], VersionRow>('SELECT * FROM campaign_versions WHERE campaign_id = ? AND version = ?');
  const insert = db.prepare(
    `INSERT INTO campaign_versions (campaign_id, version, title, message, call_to_action, source, instruction, model, created_by, created_at)
     VALUES (@campaignId, (SELECT coalesce(max(version), 0) + 1 FROM campaign_versions WHERE campaign_id = @campaignId),
             @title, @message, @callToAction, @source, @instruction, @model, @createdBy, @now)
     RETURNING *`,
  );

  return {
    /** Appends the next version of the campaign and returns it. */
    append(campaignId: string, version: NewVersion, now: Date): CampaignVersion {
      const row = insert.get({ campaignId, ...version, instruction: version.instruction ?? null, model: version.model ?? null, now: now.getTime() }) as VersionRow;
      return toVersion(row);
    },
    /** Returns the campaign's versions, oldest first (none for an unknown campaign). */
    list(campaignId: string): CampaignVersion[] {
      return all.all(campaignId).map(toVersion);
    },
    /** Returns one version, or undefined. */
    find(campaignId: string, version: number): CampaignVersion | undefined {
      const row = one.get(campaignId, version);
      return row && toVersion(row);
    },
  };
}
