// @ts-check
// The assistant's proposals, as cards in its reply: what it would do in one line, with Confirm and Dismiss while it is
// proposed. Confirming runs it as the user (saving a segment, or drafting a campaign, which asks the model and can take
// seconds); the card then says what became of it and links to what was made. A failure is shown on the card and leaves
// the buttons usable. Reopening a thread shows each proposal as it is stored.
import * as api from '../endpoints.js';
import { ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { errorBox } from '../problems.js';

/** @typedef {import('../types.js').ChatAction} ChatAction */

/**
 * How each kind of proposal reads: its button while confirming, what the card says meanwhile and once confirmed, and
 * the link to what it made.
 * @type {Record<ChatAction['kind'], { busy: string, working: string, done: string, href: (id: string) => string, link: (action: ChatAction) => string }>}
 */
const KINDS = {
  save_segment: {
    busy: 'Saving…',
    working: 'Saving the segment…',
    done: 'Saved',
    href: (id) => `/segments/${encodeURIComponent(id)}`,
    link: (action) => ('name' in action.input ? `Open segment “${action.input.name}”` : 'Open the segment'),
  },
  draft_campaign: {
    busy: 'Drafting…',
    working: 'The model is drafting the campaign. This can take a few seconds…',
    done: 'Drafted',
    href: (id) => `/campaigns/${encodeURIComponent(id)}`,
    link: () => 'Open the draft campaign',
  },
};

/**
 * The cards of a reply's proposals, or nothing when it has none. While the reply still streams (`ready` false) the
 * proposals are not stored yet, so their buttons wait.
 * @param {string} threadId
 * @param {ChatAction[] | undefined} actions
 * @param {{ ready?: boolean }} [options]
 */
export function actionCards(threadId, actions, options = {}) {
  if (!actions?.length) return null;
  return h('div', { class: 'action-cards' }, actions.map((action) => actionCard(threadId, action, options)));
}

/**
 * One proposal's card.
 * @param {string} threadId
 * @param {ChatAction} proposal
 * @param {{ ready?: boolean }} [options]
 */
export function actionCard(threadId, proposal, { ready = true } = {}) {
  const kind = KINDS[proposal.kind];
  let action = proposal;
  const state = h('p', { class: 'action-state', role: 'status' });
  const problem = h('div', { class: 'action-problem' });
  const confirmButton = h('button', { type: 'button', class: 'button small' }, 'Confirm');
  const dismissButton = h('button', { type: 'button', class: 'button secondary small' }, 'Dismiss');
  const buttons = h('div', { class: 'inline-controls' }, confirmButton, dismissButton);
  const result = h('p', { class: 'action-result' });
  const card = h(
    'div',
    { class: 'action-card', role: 'group', 'aria-label': `Proposal: ${proposal.summary}`, tabindex: '-1', dataset: { kind: proposal.kind } },
    h('p', { class: 'action-summary' }, proposal.summary),
    state,
    problem,
    buttons,
    result,
  );

  /** Shows the proposal as it is, or the request under way. @param {'confirming' | 'dismissing'} [busy] */
  const show = (busy) => {
    card.dataset.status = action.status;
    buttons.hidden = action.status !== 'proposed';
    confirmButton.disabled = dismissButton.disabled = !ready || Boolean(busy);
    confirmButton.textContent = busy === 'confirming' ? kind.busy : 'Confirm';
    dismissButton.textContent = busy === 'dismissing' ? 'Dismissing…' : 'Dismiss';
    if (busy) replace(state, h('span', { class: 'spinner', 'aria-hidden': 'true' }), busy === 'confirming' ? kind.working : 'Dismissing the proposal…');
    else if (action.status === 'confirmed') replace(state, h('span', { class: 'badge action-done' }, kind.done));
    else if (action.status === 'rejected') replace(state, h('span', { class: 'badge' }, 'Dismissed'));
    else replace(state, h('span', { class: 'muted small' }, ready ? 'Nothing is done until you confirm.' : 'You can confirm it once the reply is complete.'));
    replace(result, action.status === 'confirmed' && action.resultId ? h('a', { href: kind.href(action.resultId) }, kind.link(action)) : null);
  };

  /**
   * Confirms or dismisses; on success the card shows the new state and focus moves to its link (or the card), on
   * failure the problem is shown and the buttons can be used again.
   * @param {'confirming' | 'dismissing'} busy
   * @param {() => Promise<{ action: ChatAction }>} call
   */
  const settle = async (busy, call) => {
    replace(problem);
    show(busy);
    try {
      action = (await call()).action;
      show();
      (result.querySelector('a') ?? card).focus();
    } catch (error) {
      if (error instanceof ApiError && error.code === 'conflict') action = (await storedAction(threadId, action.id)) ?? action;
      show();
      replace(problem, errorBox(error, fieldErrors(error)));
      (buttons.hidden ? card : busy === 'confirming' ? confirmButton : dismissButton).focus();
    }
  };

  confirmButton.addEventListener('click', () => settle('confirming', () => api.chat.confirmAction(threadId, action.id)));
  dismissButton.addEventListener('click', () => settle('dismissing', () => api.chat.rejectAction(threadId, action.id)));
  show();
  return card;
}

/**
 * The proposal as stored now (after a conflict: confirmed or dismissed elsewhere), if it can be read.
 * @param {string} threadId
 * @param {string} actionId
 */
async function storedAction(threadId, actionId) {
  try {
    const messages = await api.chat.messages(threadId);
    return messages.flatMap((m) => m.actions ?? []).find((a) => a.id === actionId);
  } catch {
    return undefined;
  }
}

/**
 * The field errors of a refused proposal (say, its segment was deleted meanwhile), in the service's words.
 * @param {unknown} error
 */
function fieldErrors(error) {
  if (!(error instanceof ApiError) || !error.errors.length) return null;
  return h('ul', {}, error.errors.map((e) => h('li', {}, e.message)));
}
