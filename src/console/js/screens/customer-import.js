// @ts-check
// Importing customers from a CSV file: read and parsed in the page, sent in batches of up to 1000 rows with a
// progress bar, and every rejected row listed with its reason.
import * as api from '../endpoints.js';
import { batches, EXPECTED_HEADER, mapColumns, parseCsv, toCustomers } from '../csv.js';
import { h, replace } from '../dom.js';
import { field, formError, openDialog } from '../forms.js';
import { count, plural } from '../format.js';
import { clearFormErrors, describe, showFormError } from '../problems.js';
import { ApiError } from '../api.js';

/** The service takes at most this many rows per request. */
const BATCH_SIZE = 1000;

/** @typedef {import('../types.js').ImportReport['failures'][number]} Failure */

/** Opens the import dialog; resolves true when at least one customer was imported. */
export async function importDialog() {
  let importedAny = false;
  await openDialog('Import customers from CSV', (close, closed) => {
    const file = h('input', { type: 'file', name: 'file', accept: '.csv,text/csv' });
    const start = h('button', { type: 'submit', class: 'button' }, 'Import');
    const cancel = h('button', { type: 'button', class: 'button secondary' }, 'Close');
    const progressArea = h('div', { class: 'import-progress', hidden: true });
    const report = h('div', { class: 'import-report' });
    const form = h(
      'form',
      { class: 'stack wide-dialog', novalidate: true },
      h('p', {}, 'The first row names the columns: ', h('code', {}, EXPECTED_HEADER), '. Dates as 2026-09-30; status active, inactive or churned.'),
      formError(),
      field({ label: 'CSV file', control: file, field: 'file' }),
      progressArea,
      report,
      h('div', { class: 'dialog-actions' }, cancel, start),
    );
    // Closing the dialog (this button or Escape) stops the import: the batch under way is cancelled, no more are sent.
    cancel.addEventListener('click', () => close());
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearFormErrors(form);
      report.replaceChildren();
      const chosen = file.files?.[0];
      const problem = (/** @type {string} */ message) => showFormError(form, new ApiError({ status: 400, code: 'validation_failed', detail: message, errors: [{ field: 'file', message }] }));
      if (!chosen) return problem('Choose a CSV file first.');
      const rows = parseCsv(await chosen.text());
      const [header, ...data] = rows;
      if (!header || data.length === 0) return problem('The file has no rows of customers under its header row.');
      const { indexes, missing } = mapColumns(header);
      if (missing.length) return problem(`The file has no column for ${missing.join(', ')}. The first row should be: ${EXPECTED_HEADER}`);

      const customers = toCustomers(data, indexes);
      const bar = h('progress', { max: String(customers.length), value: '0', 'aria-label': 'Import progress' });
      const words = h('p', { role: 'status' }, `Sending ${plural(customers.length, 'row')}…`);
      replace(progressArea, bar, words);
      progressArea.hidden = false;
      start.disabled = true;
      file.disabled = true;
      cancel.textContent = 'Stop';

      let imported = 0;
      let sent = 0;
      /** @type {Failure[]} */
      const failures = [];
      /** @type {unknown} */
      let failure;
      for (const batch of batches(customers, BATCH_SIZE)) {
        try {
          const answer = await api.customers.importRows(batch, { signal: closed });
          imported += answer.imported;
          importedAny ||= answer.imported > 0;
          // The service numbers rows within the batch; shift them to the row's place in the file.
          for (const f of answer.failures) failures.push({ ...f, row: f.row + sent });
        } catch (error) {
          failure = error;
          break;
        }
        sent += batch.length;
        bar.value = sent;
        words.textContent = `Sent ${count(sent)} of ${count(customers.length)} rows…`;
      }
      if (closed.aborted) return;
      words.textContent = `Imported ${plural(imported, 'customer')}. ${failures.length ? `${plural(failures.length, 'row was', 'rows were')} rejected.` : 'No rows were rejected.'}`;
      if (failure) {
        words.textContent += ` Stopped after ${count(sent)} of ${count(customers.length)} rows: ${describe(failure)} Rows after ${count(sent)} were not sent.`;
      }
      replace(report, failures.length ? failureTable(failures) : null);
      cancel.textContent = 'Done';
      start.disabled = false;
      file.disabled = false;
      start.textContent = 'Import another file';
    });
    return form;
  });
  return importedAny;
}

/** @param {Failure[]} failures */
function failureTable(failures) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data compact' },
      h('caption', {}, 'Rejected rows (numbered from the first row under the header)'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'num' }, 'Row'), h('th', { scope: 'col' }, 'Email'), h('th', { scope: 'col' }, 'Reason'))),
      h(
        'tbody',
        {},
        failures.map((f) =>
          h(
            'tr',
            {},
            h('td', { class: 'num' }, count(f.row)),
            h('td', {}, f.email ?? '—'),
            h('td', {}, f.reason, details(f)),
          ),
        ),
      ),
    ),
  );
}

/**
 * The field messages a reason does not already say ("email: Must be a valid email address.").
 * @param {Failure} failure
 */
function details(failure) {
  const extra = failure.errors.filter((e) => !failure.reason.includes(e.message));
  return extra.length ? h('ul', { class: 'plain small' }, extra.map((e) => h('li', {}, `${e.field}: ${e.message}`))) : null;
}
