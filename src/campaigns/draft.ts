// Drafting a campaign through the language model: ask, read, repair or ask once more, then fit to the channel.
import { AppError } from '../domain/errors.ts';
import type { CampaignCopy } from '../domain/campaigns.ts';
import { cutReplyDetail, type LanguageModel, type ModelMessage } from '../llm/model.ts';
import { campaignPrompt, retryPrompt, type Brief } from './brief.ts';
import { fitCopy } from './fit.ts';
import { localCopy } from './local-copy.ts';
import { CAMPAIGN_REPLY_SCHEMA, readCampaignReply } from './reply.ts';

/** An unusable reply is shown back to the model at most this long. */
const ECHO_LIMIT = 4000;
/** A refusal is quoted in the problem detail up to this many characters. */
const REFUSAL_QUOTE_LIMIT = 300;

/**
 * Returns the campaign copy for the brief, within the channel's limits. An unusable reply is asked for once more,
 * saying what was wrong. Throws `llm_error` when the second reply is unusable too, when the reply was cut at the
 * token budget (never asked again: it would be cut again) or refused, and whatever the model throws
 * (`llm_unavailable`, the signal's reason).
 */
export async function draftCopy(model: LanguageModel, brief: Brief, signal: AbortSignal): Promise<CampaignCopy> {
  const prompt = campaignPrompt(brief);
  const messages: ModelMessage[] = [{ role: 'user', content: prompt.user }];
  const ask = async () => {
    const reply = await model.complete({
      system: prompt.system,
      messages,
      json: { name: 'campaign', schema: CAMPAIGN_REPLY_SCHEMA },
      signal,
      local: () => JSON.stringify(localCopy(brief)),
    });
    if (reply.finish.reason === 'length') throw new AppError('llm_error', cutReplyDetail(reply.finish, reply.text.trim() !== ''));
    if (reply.finish.reason === 'refusal') {
      const words = reply.text.trim().replace(/\s+/g, ' ').slice(0, REFUSAL_QUOTE_LIMIT);
      throw new AppError('llm_error', words ? `The model refused to write this campaign: "${words}"` : 'The model refused to write this campaign.');
    }
    return reply.text;
  };

  const first = await ask();
  let reply = readCampaignReply(first);
  if (!reply.ok) {
    messages.push({ role: 'assistant', content: first.slice(0, ECHO_LIMIT) || '(empty)' }, { role: 'user', content: retryPrompt(reply.problem) });
    reply = readCampaignReply(await ask());
  }
  if (!reply.ok) throw new AppError('llm_error', `The model's reply could not be used as a campaign, twice. ${reply.problem}`);
  return fitCopy(reply.copy, brief.channel);
}
