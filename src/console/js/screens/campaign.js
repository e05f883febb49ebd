// @ts-check
// One campaign: the draft as it would look on its channel with the limits, editing, revising, variants and versions
// while it is a draft, the review moves the user's role allows, the hand-off once it is approved, and the trail of who
// moved it when.
import * as api from '../endpoints.js';
import { h, loading, pageHeader, replace } from '../dom.js';
import { channelPreview, limitList } from '../channel-preview.js';
import { characterCounter, confirmAction, field, formError, notify } from '../forms.js';
import { CAMPAIGN_STATUS_NAMES, CHANNEL_NAMES, dateTime, TONE_NAMES } from '../format.js';
import { CHANNEL_LIMITS } from '../limits.js';
import { clearFormErrors, errorBox, showFormError } from '../problems.js';
import { navigate } from '../router.js';
import * as session from '../session.js';
import { builtInNote, draftingPanel } from './campaign-drafting.js';
import { handoffCard } from './campaign-handoff.js';

/** @typedef {import('../types.js').Campaign} Campaign */
/** @typedef {import('../types.js').CampaignStatus} CampaignStatus */

/**
 * The review moves from each status (product.md section 6); `review` moves need a marketing lead or an admin.
 * @type {Record<CampaignStatus, { to: CampaignStatus, label: string, review: boolean, done: string }[]>}
 */
const MOVES = {
  draft: [{ to: 'in_review', label: 'Submit for review', review: false, done: 'Submitted for review.' }],
  in_review: [
    { to: 'approved', label: 'Approve', review: true, done: 'Approved.' },
    { to: 'draft', label: 'Request changes', review: true, done: 'Sent back as a draft with your request.' },
  ],
  approved: [
    { to: 'sent', label: 'Mark as sent', review: true, done: 'Marked as sent.' },
    { to: 'draft', label: 'Reopen as draft', review: false, done: 'Reopened as a draft.' },
  ],
  sent: [],
};

/** @type {import('../types.js').Screen} */
export function campaignScreen(root, { params, signal }) {
  document.title = 'Campaign · Campaign console';
  const id = /** @type {string} */ (params.id);
  root.append(loading('Loading the campaign…'));

  /** Shows the campaign as it is now; `then` runs once it is shown. @param {() => void} [then] */
  const load = async (then) => {
    try {
      const [campaign, events] = await Promise.all([api.campaigns.get(id, { signal }), api.campaigns.events(id, { signal })]);
      show(campaign, events);
      then?.();
    } catch (error) {
      if (!signal.aborted) replace(root, pageHeader('Campaign'), errorBox(error, h('a', { href: '/campaigns' }, 'Back to campaigns')));
    }
  };

  /**
   * @param {Campaign} campaign
   * @param {import('../types.js').CampaignEvent[]} events
   */
  const show = (campaign, events) => {
    document.title = `${campaign.title} · Campaign console`;
    const previewArea = h('div', {}, channelPreview(campaign.channel, campaign), limitList(campaign.channel, campaign));
    const redraw = (/** @type {import('../types.js').CampaignCopy} */ copy) => replace(previewArea, channelPreview(campaign.channel, copy), limitList(campaign.channel, copy));
    // A new copy (revised, or a version restored) is read again with the trail that notes it; focus goes to its preview.
    const copyChanged = (/** @type {string} */ said) =>
      load(() => {
        notify(said);
        document.getElementById('preview-title')?.focus();
      });
    const drafting = campaign.status === 'draft' ? draftingPanel(campaign, { signal, events, changed: copyChanged }) : null;
    replace(
      root,
      pageHeader(campaign.title, h('span', {}, h('span', { class: `badge campaign-${campaign.status}`, 'data-status': campaign.status }, CAMPAIGN_STATUS_NAMES[campaign.status]), ` ${CHANNEL_NAMES[campaign.channel]} for `, h('a', { href: `/segments/${encodeURIComponent(campaign.segmentId)}` }, campaign.segmentName))),
      drafting?.variants,
      h(
        'div',
        { class: 'grid-2 campaign-layout' },
        h('section', { class: 'card', 'aria-labelledby': 'preview-title' }, h('h2', { id: 'preview-title', tabindex: '-1' }, `Preview: ${CHANNEL_NAMES[campaign.channel]}`), previewArea, campaign.model === 'local' ? builtInNote() : null),
        h(
          'div',
          { class: 'stack' },
          campaign.status === 'approved' || campaign.status === 'sent' ? handoffCard(campaign, signal) : null,
          reviewCard(campaign, load),
          drafting?.revise,
          campaign.status === 'draft' ? editCard(campaign, redraw, (updated) => show(updated, events)) : null,
          drafting?.versions,
          detailsCard(campaign),
          trailCard(events),
        ),
      ),
    );
  };

  void load();
}

/**
 * @param {Campaign} campaign
 * @param {() => Promise<void>} reload
 */
function reviewCard(campaign, reload) {
  const allowed = MOVES[campaign.status].filter((move) => !move.review || session.can('review'));
  const note = h('textarea', { name: 'note', rows: '2', maxlength: '1000', placeholder: 'Optional: what changed, or what to change' });
  const form = h('form', { class: 'stack', novalidate: true, onsubmit: (/** @type {Event} */ e) => e.preventDefault() }, formError());
  const waiting = MOVES[campaign.status].length > allowed.length ? h('p', { class: 'muted' }, campaign.status === 'in_review' ? 'Waiting for a marketing lead or an admin to review it.' : 'A marketing lead or an admin marks it as sent.') : null;
  if (allowed.length) form.append(field({ label: 'Note for the trail', control: note }));
  const buttons = allowed.map((move, i) => {
    const button = h('button', { type: 'button', class: i === 0 ? 'button' : 'button secondary', 'data-move': move.to }, move.label);
    button.addEventListener('click', async () => {
      clearFormErrors(form);
      for (const b of form.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = true;
      try {
        await api.campaigns.move(campaign.id, move.to, note.value.trim() || undefined);
        notify(move.done);
        await reload();
      } catch (error) {
        showFormError(form, error);
        for (const b of form.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = false;
      }
    });
    return button;
  });
  if (campaign.status === 'draft') {
    const remove = h('button', { type: 'button', class: 'button danger secondary' }, 'Delete draft');
    remove.addEventListener('click', async () => {
      if (!(await confirmAction({ title: 'Delete draft', text: `Delete the draft “${campaign.title}”?`, confirm: 'Delete', danger: true }))) return;
      try {
        await api.campaigns.remove(campaign.id);
        notify('Draft deleted.');
        navigate('/campaigns');
      } catch (error) {
        showFormError(form, error);
      }
    });
    buttons.push(remove);
  }
  form.append(h('div', { class: 'form-actions start' }, buttons));
  const statusWords = { draft: 'A draft: edit it, then submit it for review.', in_review: 'In review.', approved: 'Approved. Once it has gone out, it is marked as sent; reopening it as a draft unfreezes the audience.', sent: 'Sent. Nothing more to do.' };
  return h('section', { class: 'card', 'aria-labelledby': 'review-title' }, h('h2', { id: 'review-title' }, 'Review'), h('p', {}, statusWords[campaign.status]), waiting, allowed.length || campaign.status === 'draft' ? form : null);
}

/**
 * @param {Campaign} campaign
 * @param {(copy: import('../types.js').CampaignCopy) => void} redraw
 * @param {(updated: Campaign) => void} saved
 */
function editCard(campaign, redraw, saved) {
  const limits = CHANNEL_LIMITS[campaign.channel];
  const title = h('input', { name: 'title', value: campaign.title });
  const message = h('textarea', { name: 'message', rows: campaign.channel === 'email' ? '8' : '4' });
  message.value = campaign.message;
  const callToAction = h('input', { name: 'callToAction', value: campaign.callToAction });
  const save = h('button', { type: 'submit', class: 'button' }, 'Save changes');
  const form = h(
    'form',
    { class: 'stack', novalidate: true },
    formError(),
    field({ label: 'Title', control: title, hint: characterCounter(title, limits.title) }),
    field({ label: 'Message', control: message, hint: characterCounter(message, limits.message) }),
    field({ label: 'Call to action', control: callToAction, hint: characterCounter(callToAction, limits.callToAction) }),
    h('div', { class: 'form-actions start' }, save),
  );
  const copy = () => ({ title: title.value, message: message.value, callToAction: callToAction.value });
  form.addEventListener('input', () => redraw(copy()));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFormErrors(form);
    save.disabled = true;
    try {
      const updated = await api.campaigns.update(campaign.id, copy());
      notify('Changes saved.');
      saved(updated);
    } catch (error) {
      showFormError(form, error);
      save.disabled = false;
    }
  });
  return h('section', { class: 'card', 'aria-labelledby': 'edit-title' }, h('h2', { id: 'edit-title' }, 'Edit the draft'), form);
}

/** @param {Campaign} campaign */
function detailsCard(campaign) {
  const row = (/** @type {string} */ term, /** @type {import('../dom.js').Child} */ value) => h('div', {}, h('dt', {}, term), h('dd', {}, value));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'details-title' },
    h('h2', { id: 'details-title' }, 'Brief'),
    h('dl', { class: 'details' }, row('Objective', campaign.objective), row('Tone', TONE_NAMES[campaign.tone]), row('Written by', campaign.model === 'local' ? 'The built-in generator (no model connected)' : campaign.model), row('Created', dateTime(campaign.createdAt)), row('Updated', dateTime(campaign.updatedAt))),
  );
}

/**
 * What a line of the trail says happened; a draft → draft line is work on the copy (revised, variants, restored), its
 * note saying which.
 * @param {import('../types.js').CampaignEvent} e
 */
function movedText(e) {
  if (e.from === null) return 'drafted it';
  if (e.from === e.to) return 'worked on the draft';
  return `moved it from ${CAMPAIGN_STATUS_NAMES[e.from].toLowerCase()} to ${CAMPAIGN_STATUS_NAMES[e.to].toLowerCase()}`;
}

/** @param {import('../types.js').CampaignEvent[]} events */
function trailCard(events) {
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'trail-title' },
    h('h2', { id: 'trail-title' }, 'Trail'),
    h(
      'ol',
      { class: 'trail' },
      events.map((e) =>
        h(
          'li',
          {},
          h('p', {}, h('strong', {}, e.userName ?? 'A former user'), ' ', movedText(e)),
          e.note ? h('blockquote', {}, e.note) : null,
          h('p', { class: 'muted small' }, h('time', { datetime: e.at }, dateTime(e.at))),
        ),
      ),
    ),
  );
}
