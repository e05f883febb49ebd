// @ts-check
// The condition builder: field, comparison and value rows, added and removed, with a live count of the matching
// customers that follows the typing (debounced; an answer to an older question is dropped). The rows can also be
// filled from a description in plain words, for the marketer to check before saving.
import * as api from '../endpoints.js';
import { isAbort } from '../api.js';
import { debounce, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, field, formError, notify, select } from '../forms.js';
import { count, FIELD_NAMES, OPERATOR_NAMES, percent, plural } from '../format.js';
import { clearFormErrors, describe, errorBox, showFormError } from '../problems.js';
import { navigate } from '../router.js';
import { describeCard } from './segment-description.js';
import { exportButtons } from './segment-export.js';

/** @typedef {import('../types.js').Condition} Condition */
/** @typedef {import('../types.js').ConditionField} ConditionField */

const MAX_CONDITIONS = 10;
const NUMERIC_OPERATORS = /** @type {const} */ (['gte', 'gt', 'lte', 'lt']);
const HINTS = { country: 'Exact name, any case', totalTransactions: 'Number of purchases', totalAmountSpent: 'Lifetime spend', lastActivityDays: 'Days since their last activity' };

/** @type {import('../types.js').Screen} */
export function segmentEditorScreen(root, { params, signal }) {
  const isNew = params.id === 'new';
  document.title = `${isNew ? 'New segment' : 'Edit segment'} · Campaign console`;
  root.append(loading('Loading the segment…'));
  const existing = isNew ? Promise.resolve(null) : api.segments.get(/** @type {string} */ (params.id), { signal });
  existing.then(
    (segment) => build(root, segment, signal),
    (error) => replace(root, pageHeader('Edit segment'), errorBox(error, h('a', { href: '/segments' }, 'Back to segments'))),
  );
}

/**
 * @param {HTMLElement} root
 * @param {import('../types.js').Segment | null} segment
 * @param {AbortSignal} signal
 */
function build(root, segment, signal) {
  const name = h('input', { name: 'name', required: true, maxlength: '80', value: segment?.name ?? '', placeholder: 'e.g. Lapsed big spenders' });
  const rowsArea = h('div', { class: 'conditions' });
  const addButton = h('button', { type: 'button', class: 'button secondary small' }, '+ Add condition');
  const countValue = h('p', { class: 'count-value' }, '–');
  const countNote = h('p', { class: 'muted small' });
  const shareBar = h('div', { class: 'share-bar', 'aria-hidden': 'true' }, h('span', {}));
  const countBox = h('section', { class: 'card count-box', 'aria-labelledby': 'count-title', 'aria-live': 'polite' }, h('h2', { id: 'count-title' }, 'Matching customers'), countValue, shareBar, countNote);
  const save = h('button', { type: 'submit', class: 'button' }, segment ? 'Save changes' : 'Save segment');
  const form = h(
    'form',
    { class: 'card stack', novalidate: true },
    formError(),
    field({ label: 'Segment name', control: name }),
    h('fieldset', { class: 'stack' }, h('legend', {}, 'Customers who match all of these'), rowsArea, addButton),
    h('div', { class: 'form-actions' }, h('a', { href: '/segments', class: 'button secondary' }, 'Cancel'), save),
  );
  /** @type {HTMLButtonElement | null} */
  let remove = null;
  if (segment) {
    remove = h('button', { type: 'button', class: 'button danger secondary' }, 'Delete segment');
    remove.addEventListener('click', async () => {
      if (!(await confirmAction({ title: 'Delete segment', text: `Delete “${segment.name}”? Campaigns drafted for it are kept.`, confirm: 'Delete', danger: true }))) return;
      try {
        await api.segments.remove(segment.id);
        notify(`Segment “${segment.name}” deleted.`);
        navigate('/segments');
      } catch (error) {
        showFormError(form, error);
      }
    });
  }
  const exportCard = segment
    ? h(
        'section',
        { class: 'card stack', 'aria-labelledby': 'export-title' },
        h('h2', { id: 'export-title' }, 'Export customers'),
        h('div', { class: 'export-actions' }, exportButtons(segment, 'button secondary small')),
        h('p', { class: 'hint' }, 'The customers matching the saved conditions now, one row each; save your changes first. The listmonk file is its subscriber import format.'),
      )
    : null;
  const describing = describeCard({ signal, replacing: segment !== null, fill: (draft) => fillFrom(draft) });
  replace(
    root,
    pageHeader(segment ? segment.name : 'New segment', 'Combine conditions, or describe the audience in words; the count updates as you type.', remove),
    h('div', { class: 'editor' }, h('div', { class: 'stack' }, describing, form), h('div', { class: 'editor-side stack' }, countBox, exportCard)),
  );

  /** @type {ReturnType<typeof conditionRow>[]} */
  const rows = [];
  const renumber = () => {
    rows.forEach((row, i) => row.setIndex(i, rows.length > 1));
    addButton.disabled = rows.length >= MAX_CONDITIONS;
    addButton.textContent = rows.length >= MAX_CONDITIONS ? `At most ${MAX_CONDITIONS} conditions` : '+ Add condition';
  };
  /** @param {Partial<Condition>} [condition] */
  const addRow = (condition) => {
    const row = conditionRow(condition ?? { field: 'totalAmountSpent', operator: 'gte' }, {
      changed: () => recount(),
      remove: () => {
        rows.splice(rows.indexOf(row), 1);
        row.element.remove();
        renumber();
        rows[0]?.focus();
        recount();
      },
    });
    rows.push(row);
    rowsArea.append(row.element);
    renumber();
    return row;
  };
  addButton.addEventListener('click', () => {
    addRow().focus();
    recount();
  });
  /** The rows become the conditions read from a description; the name is taken only when none was typed. @param {import('../types.js').SegmentDraft} draft */
  const fillFrom = (draft) => {
    if (draft.conditions.length === 0) return;
    for (const row of rows.splice(0)) row.element.remove();
    for (const condition of draft.conditions.slice(0, MAX_CONDITIONS)) addRow(condition);
    if (!name.value.trim()) name.value = draft.name.slice(0, 80);
    clearFormErrors(form);
    recount();
  };

  // The live count: each question gets a number; only the answer to the latest one is shown.
  let asked = 0;
  /** @type {AbortController | undefined} */
  let inFlight;
  let total = 0;
  void api.customers.kpis({ signal }).then((k) => (total = k.totalCustomers), () => {});
  const recount = debounce(async () => {
    const complete = rows.map((r) => r.read()).filter((c) => c.complete).map((c) => c.condition);
    const unfinished = rows.length - complete.length;
    const question = ++asked;
    inFlight?.abort();
    if (complete.length === 0) {
      countValue.textContent = '–';
      countNote.textContent = 'Give a condition a value to see how many customers match.';
      countBox.removeAttribute('aria-busy');
      return;
    }
    inFlight = new AbortController();
    countBox.setAttribute('aria-busy', 'true');
    try {
      const { matchCount } = await api.segments.preview(complete, { signal: AbortSignal.any([signal, inFlight.signal]) });
      if (question !== asked) return;
      countValue.textContent = count(matchCount);
      const share = total ? Math.min(100, (matchCount / total) * 100) : 0;
      /** @type {HTMLElement} */ (shareBar.firstElementChild).style.width = `${share.toFixed(2)}%`;
      countNote.textContent = `${total ? `${percent(Math.round(share * 10) / 10)} of ${plural(total, 'customer')}` : 'customers'}${unfinished ? `; ${plural(unfinished, 'unfinished condition')} not counted` : ''}`;
    } catch (error) {
      if (question !== asked || isAbort(error)) return;
      countValue.textContent = '–';
      countNote.textContent = describe(error);
    } finally {
      if (question === asked) countBox.removeAttribute('aria-busy');
    }
  }, 300);
  signal.addEventListener('abort', () => {
    recount.cancel();
    inFlight?.abort();
  });

  for (const condition of segment?.conditions ?? []) addRow(/** @type {Condition} */ (condition));
  if (rows.length === 0) addRow();
  recount();
  if (!segment) name.focus();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFormErrors(form);
    const conditions = rows.map((r) => r.read().condition);
    save.disabled = true;
    try {
      const saved = segment ? await api.segments.update(segment.id, { name: name.value, conditions }) : await api.segments.create({ name: name.value, conditions });
      notify(`Segment “${saved.name}” saved: ${plural(saved.matchCount, 'customer')}.`);
      navigate('/segments');
    } catch (error) {
      showFormError(form, error);
      save.disabled = false;
    }
  });
}

/**
 * One condition row. `read` returns the condition as typed and whether it is complete enough to count.
 * @param {Partial<Condition>} initial
 * @param {{ changed: () => void, remove: () => void }} on
 */
function conditionRow(initial, on) {
  const fieldSelect = select({ class: 'condition-field' }, Object.entries(FIELD_NAMES), initial.field);
  const operator = h('select', { class: 'condition-operator' });
  const value = h('input', { class: 'condition-value', autocomplete: 'off' });
  const legend = h('legend', { class: 'visually-hidden' });
  const removeButton = h('button', { type: 'button', class: 'icon-button', onclick: on.remove }, '×');
  const hint = h('span', {});
  const element = h(
    'fieldset',
    { class: 'condition' },
    legend,
    field({ label: 'Field', control: fieldSelect }),
    field({ label: 'Comparison', control: operator }),
    field({ label: 'Value', control: value, hint }),
    removeButton,
  );
  const setField = (/** @type {ConditionField} */ name, /** @type {string | undefined} */ op) => {
    const isCountry = name === 'country';
    const ops = isCountry ? ['eq'] : NUMERIC_OPERATORS;
    const chosen = op && ops.includes(/** @type {never} */ (op)) ? op : ops[0];
    replace(operator, ops.map((o) => h('option', { value: o, selected: o === chosen }, OPERATOR_NAMES[/** @type {keyof typeof OPERATOR_NAMES} */ (o)])));
    value.type = isCountry ? 'text' : 'number';
    value.inputMode = isCountry ? 'text' : 'decimal';
    value.step = 'any';
    value.placeholder = isCountry ? 'Germany' : '0';
    hint.textContent = HINTS[name];
  };
  setField(initial.field ?? 'totalAmountSpent', initial.operator);
  value.value = initial.value === undefined ? '' : String(initial.value);
  fieldSelect.addEventListener('change', () => {
    setField(/** @type {ConditionField} */ (fieldSelect.value), undefined);
    value.value = '';
    on.changed();
  });
  operator.addEventListener('change', on.changed);
  value.addEventListener('input', on.changed);

  return {
    element,
    focus: () => fieldSelect.focus(),
    /** Labels and error places follow the row's position, which changes when rows above are removed. */
    setIndex(/** @type {number} */ index, /** @type {boolean} */ removable) {
      legend.textContent = `Condition ${index + 1}`;
      fieldSelect.dataset.field = `conditions.${index}.field`;
      operator.dataset.field = `conditions.${index}.operator`;
      value.dataset.field = `conditions.${index}.value`;
      removeButton.setAttribute('aria-label', `Remove condition ${index + 1}`);
      removeButton.hidden = !removable;
    },
    /** @returns {{ condition: Condition, complete: boolean }} */
    read() {
      const name = /** @type {ConditionField} */ (fieldSelect.value);
      if (name === 'country') {
        const text = value.value.trim();
        return { condition: { field: 'country', operator: 'eq', value: text }, complete: text !== '' };
      }
      const number = value.value.trim() === '' ? NaN : Number(value.value);
      const op = /** @type {typeof NUMERIC_OPERATORS[number]} */ (operator.value);
      // An unfinished number goes to the service as null on save, so the error appears beside this value.
      return { condition: /** @type {Condition} */ ({ field: name, operator: op, value: Number.isFinite(number) ? number : null }), complete: Number.isFinite(number) };
    },
  };
}
