// Drafting a campaign through the language model: ask, read, repair or ask once more, then fit to the channel.
import type { CampaignCopy } from '../domain/campaigns.ts';
import { askForJson } from '../llm/json-reply.ts';
import type { LanguageModel } from '../llm/model.ts';
import { campaignPrompt, retryPrompt, type Brief } from './brief.ts';
import { fitCopy } from './fit.ts';
import { localCopy } from './local-copy.ts';
import { CAMPAIGN_REPLY_SCHEMA, readCampaignReply } from './reply.ts';

/**
 * Returns the campaign copy for the brief, within the channel's limits. Throws `llm_error` when the reply is
 * unusable twice, cut at the token budget or refused, and whatever the model throws (`llm_unavailable`, the
 * signal's reason).
 */
export async function draftCopy(model: LanguageModel, brief: Brief, signal: AbortSignal): Promise<CampaignCopy> {
  const copy = await askForJson(
    model,
    {
      ...campaignPrompt(brief),
      json: { name: 'campaign', schema: CAMPAIGN_REPLY_SCHEMA },
      local: () => JSON.stringify(localCopy(brief)),
      read: readCampaignReply,
      retry: retryPrompt,
      what: 'a campaign',
      refused: 'this campaign',
    },
    signal,
  );
  return fitCopy(copy, brief.channel);
}
