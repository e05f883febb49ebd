// Writes synthetic customers as the CSV export a marketing team brings (`npm run bench` uses it for import jobs).
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { syntheticCustomers } from './synthetic-customers.ts';

const HEADER = 'name,email,country,total_transactions,total_amount_spent,last_activity_date,status\n';

const quote = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/**
 * Writes `count` customers (emails from `firstSerial` on) to `path` as CSV; resolves with the file's size in bytes.
 * `changed` writes the same customers (same emails) a week later: one more purchase and 7.50 more spent each, as a
 * weekly re-import of the shop's export brings them.
 */
export async function writeCustomersCsv(path: string, count: number, options: { seed?: number; firstSerial?: number; now?: Date; changed?: boolean } = {}): Promise<number> {
  const extra = options.changed ? { transactions: 1, cents: 750 } : { transactions: 0, cents: 0 };
  const out = createWriteStream(path);
  out.write(HEADER);
  let chunk = '';
  let n = 0;
  for (const c of syntheticCustomers(count, { seed: options.seed ?? 7, firstSerial: options.firstSerial ?? 1, now: options.now })) {
    chunk += `${quote(c.name)},${c.email},${quote(c.country)},${c.totalTransactions + extra.transactions},${((c.amountCents + extra.cents) / 100).toFixed(2)},${new Date(c.lastActivityAt).toISOString().slice(0, 10)},${c.status}\n`;
    if (++n % 5000 === 0) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  return out.bytesWritten;
}
