// @ts-check
// "Describe your audience": a description in plain words read into conditions by the service (the model, or its local
// parser of plain English) for the builder's rows. What was read is shown in words with its size now, and what could
// not be used is listed word for word, so the marketer checks the rows before saving; nothing is stored here.
import * as api from '../endpoints.js';
import { h, replace } from '../dom.js';
import { characterCounter, field, formError } from '../forms.js';
import { count } from '../format.js';
import { clearFormErrors, showFormError } from '../problems.js';

/** @typedef {import('../types.js').SegmentDraft} SegmentDraft */

/** The service's bounds on a description, in characters after trimming. */
const DESCRIPTION = { min: 3, max: 500 };

/**
 * Returns the card; `fill` receives each draft the service reads, to put its conditions in the rows.
 * @param {{ signal: AbortSignal, replacing: boolean, fill: (draft: SegmentDraft) => void }} options
 */
export function describeCard({ signal, replacing, fill }) {
  const description = h('textarea', {
    name: 'description',
    rows: '2',
    maxlength: String(DESCRIPTION.max + 100),
    placeholder: 'e.g. customers in Germany with at least 3 purchases who have not bought in 3 months',
  });
  const counter = characterCounter(description, DESCRIPTION.max, DESCRIPTION.min);
  const read = h('button', { type: 'submit', class: 'button secondary' }, 'Fill in the conditions');
  const pending = h('p', { class: 'pending', role: 'status', hidden: true }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Reading your description…');
  const result = h('div', { class: 'draft-reading', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'stack', novalidate: true },
    formError(),
    field({
      label: 'Audience in your words',
      control: description,
      hint: h('span', { class: 'hint-row' }, h('span', {}, 'Countries, statuses (active, inactive, churned), amounts spent, numbers of purchases, time since the last activity.'), counter),
    }),
    h('div', { class: 'form-actions start' }, read),
    pending,
  );

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFormErrors(form);
    result.replaceChildren();
    read.disabled = true;
    description.readOnly = true;
    pending.hidden = false;
    form.setAttribute('aria-busy', 'true');
    try {
      const draft = await api.segments.draft(description.value, { signal });
      fill(draft);
      replace(result, reading(draft));
    } catch (error) {
      showFormError(form, error);
    } finally {
      read.disabled = false;
      description.readOnly = false;
      pending.hidden = true;
      form.removeAttribute('aria-busy');
    }
  });

  return h(
    'section',
    { class: 'card stack describe-card', 'aria-labelledby': 'describe-title' },
    h('h2', { id: 'describe-title' }, 'Describe your audience'),
    h('p', { class: 'hint' }, replacing ? 'The conditions below are replaced by what is read; nothing is saved until you save.' : 'The conditions below are filled in from it; check them, then save.'),
    form,
    result,
  );
}

/**
 * What the service read: the conditions in words, how many match now, and what it could not use.
 * @param {SegmentDraft} draft
 */
function reading(draft) {
  const words = draft.description.charAt(0).toUpperCase() + draft.description.slice(1);
  return h(
    'div',
    { class: 'stack' },
    h('p', {}, 'Read as: ', h('strong', { class: 'draft-description' }, words), '.'),
    h('p', {}, h('strong', { 'data-size': 'draft' }, count(draft.size)), draft.size === 1 ? ' customer matches' : ' customers match', ' now. Check the conditions below before saving.'),
    draft.unmatched.length
      ? h(
          'div',
          { class: 'alert warning not-understood' },
          h('p', {}, h('strong', {}, 'Not understood: '), draft.unmatched.map((phrase) => `“${phrase}”`).join(', ')),
          h('p', { class: 'small' }, 'These words were left out of the conditions. Add conditions for them yourself, or reword the description.'),
        )
      : null,
  );
}
