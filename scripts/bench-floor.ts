// The benchmark's floor: a bare node:http server answering the default customers (or campaigns) page from the same
// database, through the same repository call, with no routing, auth, validation or logging.
// Usage: bench-floor.ts DB PORT [customers|campaigns], DB a SQLite file or a postgres:// URL (customers only).
import { createServer } from 'node:http';
import { createCampaignRepository } from '../src/db/campaigns.ts';
import { openCustomers } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { openPgLocalCustomers } from './bench-pg.ts';

const [path, port, what = 'customers'] = process.argv.slice(2);
const query = { search: '', status: 'all', country: '', sort: 'lastActivityDate', direction: 'desc', page: 1, limit: 50 } as const;
let page: () => Promise<object>;
if (/^postgres(ql)?:\/\//.test(path!)) {
  const customers = (await openPgLocalCustomers(new PostgresEngine(path!))).store;
  page = () => customers.listCustomers(query);
} else {
  const engine = openSqliteEngine(path!);
  const customers = openCustomers(engine).store;
  const campaigns = createCampaignRepository(engine);
  page = what === 'campaigns' ? () => campaigns.listCampaigns({}, 1, 50) : () => customers.listCustomers(query);
}

createServer(async (_req, res) => {
  const body = JSON.stringify({ ...(await page()), page: 1, limit: 50 });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
