// @ts-check
// A draft as it would look on its channel: an SMS bubble, a push notification card, an email; and its lengths
// against the channel's limits.
import { h } from './dom.js';
import { count } from './format.js';
import { CHANNEL_LIMITS } from './limits.js';

/** @typedef {import('./types.js').Channel} Channel */
/** @typedef {import('./types.js').CampaignCopy} CampaignCopy */

/**
 * @param {Channel} channel
 * @param {CampaignCopy} copy
 */
export function channelPreview(channel, copy) {
  if (channel === 'sms') {
    return h(
      'div',
      { class: 'preview phone', 'aria-label': 'SMS preview' },
      h('p', { class: 'phone-sender' }, 'Your brand'),
      h('p', { class: 'sms-bubble' }, copy.message),
      h('p', { class: 'muted small' }, `Campaign title (not sent): ${copy.title}`),
    );
  }
  if (channel === 'push') {
    return h(
      'div',
      { class: 'preview lock-screen', 'aria-label': 'Push notification preview' },
      h(
        'div',
        { class: 'push-card' },
        h('p', { class: 'push-app' }, h('span', { class: 'push-icon', 'aria-hidden': 'true' }), 'Your app', h('span', { class: 'push-time' }, 'now')),
        h('p', { class: 'push-title' }, copy.title),
        h('p', { class: 'push-message' }, copy.message),
        h('p', { class: 'push-action' }, copy.callToAction),
      ),
    );
  }
  return h(
    'div',
    { class: 'preview email-preview', 'aria-label': 'Email preview' },
    h('dl', { class: 'email-head' }, h('div', {}, h('dt', {}, 'From'), h('dd', {}, 'Your brand')), h('div', {}, h('dt', {}, 'Subject'), h('dd', { class: 'strong' }, copy.title))),
    h('div', { class: 'email-body' }, copy.message.split(/\n{2,}/).map((paragraph) => h('p', {}, paragraph)), h('p', {}, h('span', { class: 'email-button' }, copy.callToAction))),
  );
}

/**
 * The three lengths against the limits, marked when over.
 * @param {Channel} channel
 * @param {CampaignCopy} copy
 */
export function limitList(channel, copy) {
  const limits = CHANNEL_LIMITS[channel];
  const item = (/** @type {string} */ label, /** @type {string} */ text, /** @type {number} */ max) => {
    const length = text.trim().length;
    return h('li', { class: length > max ? 'over' : '' }, h('span', {}, label), h('span', { class: 'num' }, `${count(length)} / ${count(max)}`));
  };
  return h(
    'ul',
    { class: 'limits', 'aria-label': `Length limits for ${channel}` },
    item('Title', copy.title, limits.title),
    item('Message', copy.message, limits.message),
    item('Call to action', copy.callToAction, limits.callToAction),
  );
}
