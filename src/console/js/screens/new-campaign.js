// @ts-check
// Drafting a campaign: segment, objective (with its character counter), channel and tone. While the model writes,
// the form says so; after a failure, "Try again" sends the same request with the same Idempotency-Key, so a draft
// that was in fact made is returned instead of a second one.
import * as api from '../endpoints.js';
import { emptyState, h, loading, pageHeader, randomId, replace } from '../dom.js';
import { characterCounter, field, formError, select } from '../forms.js';
import { CHANNEL_NAMES, count, TONE_NAMES } from '../format.js';
import { CHANNEL_LIMITS, OBJECTIVE } from '../limits.js';
import { clearFormErrors, errorBox, showFormError } from '../problems.js';
import { navigate } from '../router.js';
import { ApiError } from '../api.js';

/** Failures where the same request may well succeed a moment later. */
const RETRYABLE = new Set(['llm_unavailable', 'llm_error', 'network_error', 'bad_response', 'internal_error', 'rate_limited', 'unavailable']);

/** @type {import('../types.js').Screen} */
export function newCampaignScreen(root, { query, signal }) {
  document.title = 'New campaign · Campaign console';
  root.append(pageHeader('New campaign', 'Tell the model who it is for and what it should achieve; you review the draft next.'), loading('Loading segments…'));
  api.segments.list({ signal }).then(
    (segments) => {
      root.lastElementChild?.remove();
      if (segments.length === 0) {
        root.append(emptyState('Save a segment first', 'A campaign is drafted for a saved segment, so the model knows its audience.', h('a', { href: '/segments/new', class: 'button' }, 'New segment')));
        return;
      }
      root.append(form(segments, query.get('segmentId') ?? ''));
    },
    (error) => replace(root, pageHeader('New campaign'), errorBox(error)),
  );
}

/**
 * @param {import('../types.js').Segment[]} segments
 * @param {string} preselected
 */
function form(segments, preselected) {
  const segment = select({ name: 'segmentId' }, segments.map((s) => [s.id, `${s.name} (${count(s.matchCount)} customers)`]), preselected);
  const objective = h('textarea', { name: 'objective', rows: '4', maxlength: String(OBJECTIVE.max + 200), placeholder: 'e.g. Win back customers who have not bought in three months with 15% off their next order' });
  const counter = characterCounter(objective, OBJECTIVE.max, OBJECTIVE.min);
  const channels = h(
    'fieldset',
    { class: 'choices', 'data-field': 'channel', 'data-error-slot': 'channel-error' },
    h('legend', {}, 'Channel'),
    Object.entries(CHANNEL_NAMES).map(([value, label], i) => {
      const limits = CHANNEL_LIMITS[/** @type {keyof typeof CHANNEL_LIMITS} */ (value)];
      return h('label', { class: 'choice' }, h('input', { type: 'radio', name: 'channel', value, checked: i === 0 }), h('span', {}, label, h('span', { class: 'muted small block' }, `title ${limits.title}, message ${limits.message}, call to action ${limits.callToAction}`)));
    }),
    h('p', { class: 'field-error', id: 'channel-error', hidden: true }),
  );
  const tone = select({ name: 'tone' }, Object.entries(TONE_NAMES), 'friendly');
  const submit = h('button', { type: 'submit', class: 'button' }, 'Draft campaign');
  const pending = h('p', { class: 'pending', role: 'status', hidden: true }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'The model is drafting your campaign. This can take a little while…');
  const retryArea = h('div', {});
  const inputs = h('fieldset', { class: 'stack plain' },
    field({ label: 'Audience segment', control: segment }),
    field({ label: 'Objective', control: objective, hint: h('span', { class: 'hint-row' }, h('span', {}, 'What should the campaign achieve, and any offer to mention.'), counter) }),
    channels,
    field({ label: 'Tone', control: tone }),
  );
  const element = h('form', { class: 'card stack narrow', novalidate: true }, formError(), inputs, retryArea, pending, h('div', { class: 'form-actions' }, h('a', { href: '/campaigns', class: 'button secondary' }, 'Cancel'), submit));

  /** The request being tried: a retry of the same body reuses its key. @type {{ body: string, key: string } | null} */
  let attempt = null;
  const read = () => ({
    segmentId: segment.value,
    objective: objective.value,
    channel: /** @type {import('../types.js').Channel} */ (/** @type {HTMLInputElement | null} */ (element.querySelector('input[name="channel"]:checked'))?.value ?? ''),
    tone: /** @type {import('../types.js').Tone} */ (tone.value),
  });

  const generate = async () => {
    const body = read();
    const text = JSON.stringify(body);
    if (attempt?.body !== text) attempt = { body: text, key: randomId() };
    clearFormErrors(element);
    retryArea.replaceChildren();
    inputs.disabled = true;
    submit.disabled = true;
    submit.textContent = 'Drafting…';
    pending.hidden = false;
    element.setAttribute('aria-busy', 'true');
    try {
      const campaign = await api.campaigns.generate(body, attempt.key);
      navigate(`/campaigns/${encodeURIComponent(campaign.id)}`);
    } catch (error) {
      showFormError(element, error);
      if (error instanceof ApiError && RETRYABLE.has(error.code)) {
        const retry = h('button', { type: 'button', class: 'button' }, 'Try again');
        retry.addEventListener('click', () => void generate());
        retryArea.append(h('p', { class: 'muted small' }, 'Trying again sends the same request; if the first one did make a draft, you get that draft, not a second one.'), retry);
        retry.focus();
      }
    } finally {
      inputs.disabled = false;
      submit.disabled = false;
      submit.textContent = 'Draft campaign';
      pending.hidden = true;
      element.removeAttribute('aria-busy');
      counter.update();
    }
  };
  element.addEventListener('submit', (event) => {
    event.preventDefault();
    void generate();
  });
  return element;
}
