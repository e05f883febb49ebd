// @ts-check
// The condition builder: field, comparison and value rows, added and removed, with a live count of the matching
// customers that follows the typing (debounced; an answer to an older question is dropped) and stays beside Save
// in a bar at the foot of the screen. The rows can also be filled from a description in plain words, for the
// marketer to check before saving; words the service could not use are named again, for a confirmation, on Save.
import * as api from '../endpoints.js';
import { isAbort } from '../api.js';
import { debounce, h, loading, pageHeader, replace, uid } from '../dom.js';
import { confirmAction, field, formError, notify, select } from '../forms.js';
import { count, CUSTOMER_STATUS_NAMES, FIELD_NAMES, OPERATOR_NAMES, percent, plural } from '../format.js';
import { clearFormErrors, describe, errorBox, showFormError } from '../problems.js';
import { navigate } from '../router.js';
import { describeCard } from './segment-description.js';
import { exportButtons } from './segment-export.js';

/** @typedef {import('../types.js').Condition} Condition */
/** @typedef {import('../types.js').ConditionField} ConditionField */

const MAX_CONDITIONS = 10;
const NUMERIC_OPERATORS = /** @type {const} */ (['gte', 'gt', 'lte', 'lt']);
const CHOICE_OPERATORS = /** @type {const} */ (['eq', 'neq', 'in']);
const HINTS = { country: 'Exact name, any case', status: '', totalTransactions: 'Number of purchases', totalAmountSpent: 'Lifetime spend', lastActivityDays: 'Days since their last activity' };

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
  const formId = uid('segment-form');
  const save = h('button', { type: 'submit', class: 'button', form: formId }, segment ? 'Save changes' : 'Save segment');
  const form = h(
    'form',
    { class: 'card stack', novalidate: true, id: formId },
    formError(),
    field({ label: 'Segment name', control: name }),
    h('fieldset', { class: 'stack' }, h('legend', {}, 'Customers who match all of these'), rowsArea, addButton),
  );
  // The count again beside Save, in a bar that stays at the foot of the screen while the conditions scroll: on a
  // phone the count card is below everything else.
  const barCount = h('strong', { class: 'save-bar-value' }, '–');
  const saveBar = h(
    'div',
    { class: 'save-bar' },
    h('p', { class: 'save-bar-count' }, barCount, ' matching'),
    h('div', { class: 'form-actions' }, h('a', { href: '/segments', class: 'button secondary' }, 'Cancel'), save),
  );
  /** The words of the last description read that the conditions leave out; asked about on Save. @type {string[]} */
  let unmatched = [];
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
  form.addEventListener('submit', (event) => submit(event));
  replace(
    root,
    pageHeader(segment ? segment.name : 'New segment', 'Combine conditions, or describe the audience in words; the count updates as you type.', remove),
    h('div', { class: 'editor' }, h('div', { class: 'stack' }, describing, form, saveBar), h('div', { class: 'editor-side stack' }, countBox, exportCard)),
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
    unmatched = draft.unmatched;
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
      barCount.textContent = '–';
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
      barCount.textContent = count(matchCount);
      const share = total ? Math.min(100, (matchCount / total) * 100) : 0;
      /** @type {HTMLElement} */ (shareBar.firstElementChild).style.width = `${share.toFixed(2)}%`;
      countNote.textContent = `${total ? `${percent(Math.round(share * 10) / 10)} of ${plural(total, 'customer')}` : 'customers'}${unfinished ? `; ${plural(unfinished, 'unfinished condition')} not counted` : ''}`;
    } catch (error) {
      if (question !== asked || isAbort(error)) return;
      countValue.textContent = '–';
      barCount.textContent = '–';
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

  /** @param {SubmitEvent} event */
  async function submit(event) {
    event.preventDefault();
    clearFormErrors(form);
    const conditions = rows.map((r) => r.read().condition);
    if (unmatched.length) {
      save.disabled = true;
      const sure = await confirmAction({
        title: 'Save without some of your words?',
        text: `These words of your description are not in the conditions: ${unmatched.map((p) => `“${p}”`).join(', ')}. Save the segment without them?`,
        confirm: 'Save anyway',
      });
      save.disabled = false;
      if (!sure) return;
    }
    save.disabled = true;
    try {
      const saved = segment ? await api.segments.update(segment.id, { name: name.value, conditions }) : await api.segments.create({ name: name.value, conditions });
      notify(`Segment “${saved.name}” saved: ${plural(saved.matchCount, 'customer')}.`);
      navigate('/segments');
    } catch (error) {
      showFormError(form, error);
      save.disabled = false;
    }
  }
}

/**
 * One condition row: a field, a comparison, and a value control that fits them (a number; a country, or several
 * separated by commas; a status, or several as checkboxes). `read` returns the condition as typed and whether it is
 * complete enough to count.
 * @param {Partial<Condition>} initial
 * @param {{ changed: () => void, remove: () => void }} on
 */
function conditionRow(initial, on) {
  const fieldSelect = select({ class: 'condition-field' }, Object.entries(FIELD_NAMES), initial.field);
  const operator = h('select', { class: 'condition-operator' });
  const text = h('input', { class: 'condition-value', autocomplete: 'off' });
  const status = select({ class: 'condition-value' }, Object.entries(CUSTOMER_STATUS_NAMES));
  const boxes = Object.entries(CUSTOMER_STATUS_NAMES).map(([value, label]) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value }), label));
  const checks = () => boxes.map((label) => /** @type {HTMLInputElement} */ (label.firstElementChild));
  const legend = h('legend', { class: 'visually-hidden' });
  const removeButton = h('button', { type: 'button', class: 'icon-button', onclick: on.remove }, '×');
  const hint = h('span', {});
  const choicesLabel = h('span', { class: 'visually-hidden', id: uid('statuses') }, 'Statuses');
  const choicesError = h('p', { class: 'field-error', id: uid('statuses-error'), hidden: true });
  const choices = h('div', { class: 'status-checks', role: 'group', tabindex: '-1', 'aria-labelledby': choicesLabel.id, 'data-error-slot': choicesError.id }, boxes);
  const textField = field({ label: 'Value', control: text, hint });
  const statusField = field({ label: 'Value', control: status });
  const choicesField = h('div', { class: 'condition-choices' }, choicesLabel, choices, choicesError);
  const element = h(
    'fieldset',
    { class: 'condition' },
    legend,
    field({ label: 'Field', control: fieldSelect }),
    field({ label: 'Comparison', control: operator }),
    textField,
    removeButton,
  );
  let index = 0;
  /** Which value field is in the row: only one at a time, so "Value" names one control. */
  let valueField = textField;
  const placeErrors = () => {
    const control = valueField === choicesField ? choices : valueField === statusField ? status : text;
    control.dataset.field = `conditions.${index}.value`;
  };
  /** Shows the value control for the field and operator, carrying over what it can of the value before. */
  const setOperator = (/** @type {ConditionField} */ name, /** @type {string} */ op) => {
    const before = readValue();
    const isStatus = name === 'status';
    const isList = op === 'in';
    const next = !isStatus ? textField : isList ? choicesField : statusField;
    valueField.replaceWith(next);
    valueField = next;
    if (isStatus) {
      const chosen = [before].flat().filter((v) => typeof v === 'string' && v in CUSTOMER_STATUS_NAMES);
      if (isList) for (const box of checks()) box.checked = chosen.includes(box.value);
      else if (chosen[0]) status.value = String(chosen[0]);
    } else if (name === 'country') {
      text.type = 'text';
      text.inputMode = 'text';
      text.placeholder = isList ? 'Kenya, Nigeria, Ghana' : 'Germany';
      hint.textContent = isList ? 'Countries separated by commas, any case' : HINTS.country;
    } else {
      text.type = 'number';
      text.inputMode = 'decimal';
      text.step = 'any';
      text.placeholder = '0';
      hint.textContent = HINTS[name];
    }
    placeErrors();
  };
  /** @type {ConditionField} */
  let shown = initial.field ?? 'totalAmountSpent';
  /** The value as the controls of the field shown hold it. @returns {string | string[] | number | undefined} */
  const readValue = () => {
    if (shown === 'status') return valueField === choicesField ? checks().filter((b) => b.checked).map((b) => b.value) : status.value;
    if (shown !== 'country') return undefined;
    return operator.value === 'in' ? countriesIn(text.value) : text.value.trim();
  };
  const setField = (/** @type {ConditionField} */ name, /** @type {string | undefined} */ op) => {
    const ops = name === 'country' || name === 'status' ? CHOICE_OPERATORS : NUMERIC_OPERATORS;
    const chosen = op && ops.includes(/** @type {never} */ (op)) ? op : ops[0];
    replace(operator, ops.map((o) => h('option', { value: o, selected: o === chosen }, OPERATOR_NAMES[/** @type {keyof typeof OPERATOR_NAMES} */ (o)])));
    if (name !== shown) text.value = '';
    shown = name;
    setOperator(name, chosen);
  };
  setField(shown, initial.operator);
  if (initial.field === 'status') {
    const values = /** @type {unknown[]} */ ([initial.value].flat());
    for (const box of checks()) box.checked = values.includes(box.value);
    if (typeof initial.value === 'string') status.value = initial.value;
  } else text.value = initial.value === undefined ? '' : [initial.value].flat().join(', ');
  fieldSelect.addEventListener('change', () => {
    setField(/** @type {ConditionField} */ (fieldSelect.value), undefined);
    on.changed();
  });
  operator.addEventListener('change', () => {
    setOperator(shown, operator.value);
    on.changed();
  });
  for (const control of [text, status, choices]) control.addEventListener(control === text ? 'input' : 'change', on.changed);

  return {
    element,
    focus: () => fieldSelect.focus(),
    /** Labels and error places follow the row's position, which changes when rows above are removed. */
    setIndex(/** @type {number} */ at, /** @type {boolean} */ removable) {
      index = at;
      legend.textContent = `Condition ${at + 1}`;
      fieldSelect.dataset.field = `conditions.${at}.field`;
      operator.dataset.field = `conditions.${at}.operator`;
      placeErrors();
      removeButton.setAttribute('aria-label', `Remove condition ${at + 1}`);
      removeButton.hidden = !removable;
    },
    /** @returns {{ condition: Condition, complete: boolean }} */
    read() {
      const value = readValue();
      if (shown === 'country' || shown === 'status') {
        const complete = Array.isArray(value) ? value.length > 0 : value !== '';
        return { condition: /** @type {Condition} */ ({ field: shown, operator: operator.value, value }), complete };
      }
      const number = text.value.trim() === '' ? NaN : Number(text.value);
      const op = /** @type {typeof NUMERIC_OPERATORS[number]} */ (operator.value);
      // An unfinished number goes to the service as null on save, so the error appears beside this value.
      return { condition: /** @type {Condition} */ ({ field: shown, operator: op, value: Number.isFinite(number) ? number : null }), complete: Number.isFinite(number) };
    },
  };
}

/**
 * The countries of a comma-separated list, trimmed, without blanks or repeats (ignoring case): what the service
 * would refuse is left out rather than sent.
 * @param {string} typed
 */
function countriesIn(typed) {
  const seen = new Set();
  return typed
    .split(',')
    .map((country) => country.trim())
    .filter((country) => country !== '' && !seen.has(country.toLowerCase()) && seen.add(country.toLowerCase()));
}
