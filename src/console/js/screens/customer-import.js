// @ts-check
// Importing customers from a CSV file of any size. Choosing a file asks the service for a preview (its first 64 KB):
// how each column will be read, with a choice per column, the first rows as they would be stored and their problems.
// The marketer picks what happens to emails already stored, then the file goes up as it is and the service imports it
// as a job, whose progress the dialog follows; the rows it skipped can be downloaded as failures.csv.
import * as api from '../endpoints.js';
import { h, replace } from '../dom.js';
import { field, formError, openDialog, select } from '../forms.js';
import { count, date, money, plural } from '../format.js';
import { clearFormErrors, describe, showFormError } from '../problems.js';
import { ApiError, isAbort } from '../api.js';
import { downloadButton } from '../download.js';

/** How often the dialog asks how the job is doing. */
const POLL_MS = 500;

/** The fields a column can be read as, in a marketer's words. */
const FIELDS = /** @type {const} */ ([
  ['name', 'Name'],
  ['email', 'Email'],
  ['country', 'Country'],
  ['totalTransactions', 'Transactions'],
  ['totalAmountSpent', 'Amount spent'],
  ['lastActivityDate', 'Last activity'],
  ['status', 'Status'],
]);
const NOT_READ = '';

/** @typedef {import('../types.js').ImportJob} ImportJob */
/** @typedef {import('../types.js').ImportPreview} ImportPreview */
/** @typedef {Record<string, string | null>} Mapping */

/** Opens the import dialog; resolves true when at least one customer was imported or updated. */
export async function importDialog() {
  let importedAny = false;
  await openDialog('Import customers from CSV', (close, closed) => {
    const file = h('input', { type: 'file', name: 'file', accept: '.csv,text/csv' });
    const start = h('button', { type: 'submit', class: 'button', disabled: true }, 'Import');
    const cancel = h('button', { type: 'button', class: 'button secondary' }, 'Close');
    const previewArea = h('div', { class: 'import-preview stack', 'aria-live': 'polite' });
    const progressArea = h('div', { class: 'import-progress', hidden: true });
    const report = h('div', { class: 'import-report' });
    const skip = h('input', { type: 'radio', name: 'onExisting', value: 'skip', checked: true });
    const update = h('input', { type: 'radio', name: 'onExisting', value: 'update' });
    const existing = h(
      'fieldset',
      { class: 'choice-group' },
      h('legend', {}, 'When a row’s email is already a customer'),
      h('label', { class: 'choice' }, skip, ' Skip the row and list it with the skipped rows'),
      h('label', { class: 'choice' }, update, ' Update that customer with the row’s values'),
    );
    /** The columns the marketer set by hand: header → field, or null for a column not read. */
    /** @type {Mapping} */
    let mapping = {};
    const onExisting = () => (update.checked ? 'update' : 'skip');

    const form = h(
      'form',
      { class: 'stack wide-dialog', novalidate: true },
      h(
        'p',
        { class: 'import-help' },
        'The first row names the columns and one of them must hold the email. Columns named like ',
        ...['name', 'email', 'country', 'orders', 'amount spent', 'last activity', 'status'].flatMap((name, i, all) => [h('code', {}, name), i < all.length - 1 ? ', ' : '']),
        ' are matched by themselves; you can choose how each column is read before importing. Files of any size: the service imports them in the background.',
      ),
      formError(),
      field({ label: 'CSV file', control: file, field: 'file' }),
      previewArea,
      existing,
      progressArea,
      report,
      h('div', { class: 'dialog-actions' }, cancel, start),
    );

    /** @type {AbortController | undefined} */
    let previewing;
    const showPreview = async () => {
      const chosen = file.files?.[0];
      clearFormErrors(form);
      report.replaceChildren();
      progressArea.hidden = true;
      start.textContent = 'Import';
      if (!chosen) {
        previewArea.replaceChildren();
        start.disabled = true;
        return;
      }
      previewing?.abort();
      const mine = new AbortController();
      previewing = mine;
      start.disabled = true;
      replace(previewArea, h('p', { class: 'muted', role: 'status' }, `Reading the start of ${chosen.name}…`));
      try {
        const preview = await api.customers.previewImport(chosen, { columns: mapping, onExisting: onExisting() }, { signal: AbortSignal.any([closed, mine.signal]) });
        replace(previewArea, ...previewView(preview, (header, value) => {
          mapping = { ...mapping, [header]: value === NOT_READ ? null : value };
          void showPreview();
        }));
        start.disabled = false;
      } catch (error) {
        if (isAbort(error) || closed.aborted || mine.signal.aborted) return;
        previewArea.replaceChildren();
        const refused = error instanceof ApiError && error.code === 'validation_failed';
        showFormError(form, refused ? new ApiError({ ...error, errors: [{ field: 'file', message: error.detail }] }) : error);
        // A mapping the file refuses is forgotten, so choosing again starts from the names in the file.
        if (refused && error.errors?.some((e) => e.field === 'columns')) mapping = {};
      }
    };
    file.addEventListener('change', () => {
      mapping = {};
      void showPreview();
    });
    skip.addEventListener('change', () => void showPreview());
    update.addEventListener('change', () => void showPreview());

    // Closing the dialog stops an upload under way; a job already running goes on in the service.
    cancel.addEventListener('click', () => close());
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearFormErrors(form);
      report.replaceChildren();
      const chosen = file.files?.[0];
      if (!chosen) {
        const message = 'Choose a CSV file first.';
        return showFormError(form, new ApiError({ status: 400, code: 'validation_failed', detail: message, errors: [{ field: 'file', message }] }));
      }
      const bar = h('progress', { max: String(chosen.size), value: '0', 'aria-label': 'Import progress' });
      const words = h('p', { role: 'status' }, `Uploading ${chosen.name}…`);
      replace(progressArea, bar, words);
      progressArea.hidden = false;
      for (const control of [start, file, skip, update, ...previewArea.querySelectorAll('select')]) /** @type {HTMLInputElement} */ (control).disabled = true;
      cancel.textContent = 'Close';

      const finish = () => {
        for (const control of [start, file, skip, update]) control.disabled = false;
        start.textContent = 'Import another file';
      };
      /** @type {ImportJob} */
      let job;
      try {
        job = await api.customers.uploadImport(chosen, { columns: mapping, onExisting: onExisting() }, { signal: closed });
      } catch (error) {
        if (isAbort(error) || closed.aborted) return;
        progressArea.hidden = true;
        showFormError(form, error instanceof ApiError && error.code === 'validation_failed' ? new ApiError({ ...error, errors: [{ field: 'file', message: error.detail }] }) : error);
        finish();
        return;
      }
      words.textContent = 'Importing…';
      for (;;) {
        bar.value = job.bytesRead;
        words.textContent = `Read ${plural(job.rowsRead, 'row')}: ${count(job.imported)} imported, ${count(job.updated)} updated, ${count(job.skipped)} skipped…`;
        if (job.status !== 'running') break;
        try {
          await new Promise((resolve, reject) => {
            const timer = setTimeout(resolve, POLL_MS);
            closed.addEventListener('abort', () => (clearTimeout(timer), reject(closed.reason)), { once: true });
          });
          job = await api.customers.importJob(job.id, { signal: closed });
        } catch (error) {
          if (isAbort(error) || closed.aborted) return;
          words.textContent = `Lost track of the import: ${describe(error)} It goes on in the service.`;
          finish();
          return;
        }
      }
      importedAny ||= job.imported + job.updated > 0;
      bar.value = chosen.size;
      const outcome = job.status === 'completed' ? 'Done.' : job.status === 'failed' ? 'The file could not be read to its end.' : 'The import was interrupted.';
      const updated = job.onExisting === 'update' ? ` Updated ${plural(job.updated, 'customer')}.` : '';
      words.textContent = `${outcome} Imported ${plural(job.imported, 'customer')}.${updated} ${job.skipped ? `${plural(job.skipped, 'row was', 'rows were')} skipped.` : 'No rows were skipped.'}`;
      replace(report, summary(job));
      cancel.textContent = 'Done';
      finish();
    });
    return form;
  });
  return importedAny;
}

/**
 * The preview: a choice per column, the first rows as they would be stored, and the problems among them.
 * @param {ImportPreview} preview
 * @param {(header: string, field: string) => void} onChoose
 */
function previewView(preview, onChoose) {
  const choices = [[NOT_READ, 'Not imported'], ...FIELDS].map(([value, label]) => /** @type {[string, string]} */ ([value, label]));
  const columns = h(
    'table',
    { class: 'import-columns' },
    h('caption', {}, 'How each column will be read'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Column'), h('th', { scope: 'col' }, 'Read as'))),
    h(
      'tbody',
      {},
      preview.columns.map(({ header, field: read }) => {
        const control = select({ 'aria-label': `Read column ${header} as` }, choices, read ?? NOT_READ);
        control.addEventListener('change', () => onChoose(header, /** @type {HTMLSelectElement} */ (control).value));
        return h('tr', {}, h('th', { scope: 'row' }, header), h('td', {}, control));
      }),
    ),
  );
  const rows = preview.rows.length
    ? h(
        'div',
        { class: 'import-rows-scroll' },
        h(
          'table',
          { class: 'import-rows' },
          h('caption', {}, 'The first rows as they will be stored'),
          h('thead', {}, h('tr', {}, ...['Line', 'Name', 'Email', 'Country', 'Transactions', 'Spent', 'Last activity', 'Status', ''].map((label) => h('th', { scope: 'col' }, label)))),
          h(
            'tbody',
            {},
            preview.rows.map((row) =>
              h(
                'tr',
                {},
                ...[String(row.line), row.name, row.email, row.country, count(row.totalTransactions), money(row.totalAmountSpent), date(row.lastActivityDate), row.status].map((text) => h('td', {}, text)),
                h('td', {}, row.existing ? 'updates a customer' : 'new'),
              ),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'None of the first rows would be imported as they are.');
  const problems = preview.problems.length
    ? h(
        'div',
        { class: 'stack' },
        h('h3', {}, `Rows that would be skipped (${count(preview.problems.length)})`),
        h('ul', { class: 'import-problems' }, preview.problems.map((p) => h('li', {}, `Line ${p.line}${p.email ? ` (${p.email})` : ''}: ${p.reason}`))),
      )
    : h('p', { class: 'muted small' }, 'No problems among the first rows.');
  return [columns, rows, problems];
}

/**
 * The columns left unread, and the skipped rows to download.
 * @param {ImportJob} job
 */
function summary(job) {
  const download = downloadButton({
    label: 'Download skipped rows (failures.csv)',
    class: 'button secondary small',
    fetchFile: async () => ({ blob: await api.customers.importFailures(job.id), fileName: `${(job.fileName ?? 'import').replace(/\.csv$/i, '')}-failures.csv` }),
  });
  return h(
    'div',
    { class: 'stack' },
    job.ignoredColumns.length ? h('p', { class: 'muted small' }, `Columns not read: ${job.ignoredColumns.join(', ')}.`) : null,
    job.skipped ? h('p', {}, 'Each skipped row is listed with its line in the file and the reason. ', download) : null,
  );
}
