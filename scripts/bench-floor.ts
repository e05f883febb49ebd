// The benchmark's floor: a bare node:http server answering the default customers page from the same database,
// through the same repository call, with no routing, auth, validation or logging. Usage: bench-floor.ts DB PORT
import { createServer } from 'node:http';
import { createCustomerRepository } from '../src/db/customers.ts';
import { openDatabase } from '../src/db/database.ts';

const [path, port] = process.argv.slice(2);
const customers = createCustomerRepository(openDatabase(path!));
const query = { search: '', status: 'all', country: '', sort: 'lastActivityDate', direction: 'desc', page: 1, limit: 50 } as const;

createServer((_req, res) => {
  const body = JSON.stringify({ ...customers.listCustomers(query), page: 1, limit: 50 });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
