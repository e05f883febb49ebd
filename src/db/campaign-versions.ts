// SQL for the versions of a campaign's copy: every copy it has had, numbered from 1. The campaign repository writes
// them inside its own transactions (src/db/campaigns.ts); this file only reads and appends rows.
import type { CampaignCopy, VersionSource } from '../domain/campaigns.ts';
import type { SqliteEngine } from './engine.ts';

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

/** A row of campaign_versions, as both engines return it. */
export interface VersionRow {
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

/** The version a row holds; `instruction` and `model` only when set. */
export function toVersion(row: VersionRow): CampaignVersion {
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

/**
 * The version statements. They are synchronous: they run inside the campaign repository's `engine.write` (or
 * beside its reads), so that a version's number and the change it records commit together.
 */
export interface CampaignVersionStatements {
  /** Appends the next version of the campaign and returns it; runs inside the transaction of the change it records. */
  append(campaignId: string, version: NewVersion, now: Date): CampaignVersion;
  /** Returns the campaign's versions, oldest first (none for an unknown campaign). */
  list(campaignId: string): CampaignVersion[];
  /** Returns one version, or undefined. */
  find(campaignId: string, version: number): CampaignVersion | undefined;
}

/** Returns the version statements, prepared once on the engine's connection. */
export function createCampaignVersionStatements({ db }: SqliteEngine): CampaignVersionStatements {
  const all = db.prepare<[string], VersionRow>('SELECT * FROM campaign_versions WHERE campaign_id = ? ORDER BY version');
  const one = db.prepare<[string, number], VersionRow>('SELECT * FROM campaign_versions WHERE campaign_id = ? AND version = ?');
  const insert = db.prepare(
    `INSERT INTO campaign_versions (campaign_id, version, title, message, call_to_action, source, instruction, model, created_by, created_at)
     VALUES (@campaignId, (SELECT coalesce(max(version), 0) + 1 FROM campaign_versions WHERE campaign_id = @campaignId),
             @title, @message, @callToAction, @source, @instruction, @model, @createdBy, @now)
     RETURNING *`,
  );

  return {
    append(campaignId, version, now) {
      const row = insert.get({ campaignId, ...version, instruction: version.instruction ?? null, model: version.model ?? null, now: now.getTime() }) as VersionRow;
      return toVersion(row);
    },
    list(campaignId) {
      return all.all(campaignId).map(toVersion);
    },
    find(campaignId, version) {
      const row = one.get(campaignId, version);
      return row && toVersion(row);
    },
  };
}
