// @ts-check
// Importing customers from a CSV file of any size: the file is uploaded as it is and the service imports it as a
// job, whose progress the dialog follows; the rows it skipped can be downloaded as failures.csv. Nothing is parsed
// in the page.
import * as api from '../endpoints.js';
import { h, replace } from '../dom.js';
import { field, formError, openDialog } from '../forms.js';
import { count, plural } from '../format.js';
import { clearFormErrors, describe, showFormError } from '../problems.js';
import { ApiError, isAbort } from '../api.js';
import { downloadButton } from '../download.js';

/** How often the dialog asks how the job is doing. */
const POLL_MS = 500;

const COLUMNS = 'name, email, country, total_transactions, total_amount_spent, last_activity_date, status';

/** @typedef {import('../types.js').ImportJob} ImportJob */

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
      h(
        'p',
        {},
        'The first row names the columns; an ',
        h('code', {}, 'email'),
        ' column is required. Columns are matched by name: ',
        h('code', {}, COLUMNS),
        ' (or full name, orders, amount, last activity…); others are ignored. Files of any size: the service imports them in the background.',
      ),
      formError(),
      field({ label: 'CSV file', control: file, field: 'file' }),
      progressArea,
      report,
      h('div', { class: 'dialog-actions' }, cancel, start),
    );
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
      start.disabled = true;
      file.disabled = true;
      cancel.textContent = 'Close';

      const finish = () => {
        start.disabled = false;
        file.disabled = false;
        start.textContent = 'Import another file';
      };
      /** @type {ImportJob} */
      let job;
      try {
        job = await api.customers.uploadImport(chosen, { signal: closed });
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
        words.textContent = `Read ${plural(job.rowsRead, 'row')}: ${count(job.imported)} imported, ${count(job.skipped)} skipped…`;
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
      importedAny ||= job.imported > 0;
      bar.value = chosen.size;
      const outcome = job.status === 'completed' ? 'Done.' : job.status === 'failed' ? 'The file could not be read to its end.' : 'The import was interrupted.';
      words.textContent = `${outcome} Imported ${plural(job.imported, 'customer')}. ${job.skipped ? `${plural(job.skipped, 'row was', 'rows were')} skipped.` : 'No rows were skipped.'}`;
      replace(report, summary(job));
      cancel.textContent = 'Done';
      finish();
    });
    return form;
  });
  return importedAny;
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
