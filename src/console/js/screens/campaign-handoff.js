// @ts-check
// The hand-off of an approved or sent campaign to the tool that sends it: the audience frozen at approval beside its
// size now, its customers as CSV (plain, or listmonk's import format), and the text to copy field by field.
import * as api from '../endpoints.js';
import { copyButton } from '../clipboard.js';
import { h, loading, replace } from '../dom.js';
import { downloadButton } from '../download.js';
import { count, dateTime, plural } from '../format.js';
import { errorBox } from '../problems.js';

/** @typedef {import('../types.js').Campaign} Campaign */
/** @typedef {import('../types.js').CampaignAudience} CampaignAudience */

/**
 * The hand-off card; its audience loads on its own, so the rest of the screen does not wait for the count.
 * @param {Campaign} campaign
 * @param {AbortSignal} signal
 */
export function handoffCard(campaign, signal) {
  const audienceArea = h('div', { class: 'frozen-audience', 'aria-live': 'polite' }, loading('Loading the audience frozen at approval…'));
  api.campaigns.audience(campaign.id, { signal }).then(
    (audience) => replace(audienceArea, audienceFacts(audience)),
    (error) => replace(audienceArea, errorBox(error)),
  );
  const intro =
    campaign.status === 'sent'
      ? 'Sent. The audience and the text stay here for the record.'
      : 'Approved and handed to you: download the audience, copy the text into the tool that sends it, then mark it as sent.';
  return h(
    'section',
    { class: 'card handoff', 'aria-labelledby': 'handoff-title' },
    h('h2', { id: 'handoff-title' }, 'Hand-off'),
    h('p', {}, intro),
    h('h3', {}, 'Audience frozen at approval'),
    audienceArea,
    h(
      'div',
      { class: 'handoff-downloads' },
      downloadButton({ label: 'Download audience (CSV)', class: 'button', fetchFile: () => api.campaigns.audienceCsv(campaign.id, 'plain') }),
      downloadButton({ label: 'Download for listmonk', fetchFile: () => api.campaigns.audienceCsv(campaign.id, 'listmonk') }),
    ),
    h(
      'p',
      { class: 'hint' },
      'One row per customer who matches the frozen conditions now. The listmonk file is its subscriber import format: email, name, and the other fields as attributes.',
    ),
    h('h3', {}, 'Text'),
    h(
      'dl',
      { class: 'copy-list' },
      copyRow('Title', 'title', campaign.title),
      copyRow('Message', 'message', campaign.message),
      copyRow('Call to action', 'call to action', campaign.callToAction),
    ),
  );
}

/**
 * The frozen audience in words, with its size at approval next to its size now.
 * @param {CampaignAudience} audience
 */
function audienceFacts(audience) {
  const change = audience.sizeNow - audience.sizeAtApproval;
  const since = change === 0 ? 'the same as at approval' : `${plural(Math.abs(change), 'customer')} ${change > 0 ? 'more' : 'fewer'} than at approval`;
  return h(
    'div',
    { class: 'stack' },
    h('p', { class: 'audience-description' }, audience.description.charAt(0).toUpperCase() + audience.description.slice(1)),
    h(
      'dl',
      { class: 'audience-sizes' },
      h(
        'div',
        {},
        h('dt', {}, 'At approval'),
        h('dd', {}, h('strong', { 'data-size': 'at-approval' }, count(audience.sizeAtApproval)), ' customers', h('span', { class: 'muted small block' }, h('time', { datetime: audience.approvedAt }, dateTime(audience.approvedAt)))),
      ),
      h('div', {}, h('dt', {}, 'Now'), h('dd', {}, h('strong', { 'data-size': 'now' }, count(audience.sizeNow)), ' customers', h('span', { class: 'muted small block' }, since))),
    ),
  );
}

/**
 * One field of the text, shown as it will be pasted, with its Copy button.
 * @param {string} label
 * @param {string} name
 * @param {string} text
 */
function copyRow(label, name, text) {
  const shown = h('p', { class: 'copy-text' }, text);
  return h('div', {}, h('dt', {}, label, copyButton({ text: () => text, name, source: shown })), h('dd', {}, shown));
}
