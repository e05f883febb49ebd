// `npm run demo`: the service on its own demo database, seeded on first run with 5,000 customers over 24 months,
// one user of each role, a few saved segments, campaigns at every review step and an assistant conversation.
// Credentials are printed. DEMO_DATABASE_PATH moves it.
import { existsSync } from 'node:fs';
import { ConfigError, loadConfig } from '../src/config.ts';
import { openCustomers } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { createSegmentRepository } from '../src/db/segments.ts';
import { createUserRepository, type User } from '../src/db/users.ts';
import type { Role } from '../src/domain/auth-user.ts';
import { hashPassword } from '../src/domain/passwords.ts';
import { compileConditions, type Condition } from '../src/domain/segments.ts';
import { startService } from '../src/server.ts';
import { addDemoContent } from './demo-content.ts';
import { seedDatabase } from './seed.ts';

const path = process.env.DEMO_DATABASE_PATH ?? './data/demo.db';
const PASSWORD = 'demo-password';
const people: { email: string; fullName: string; role: Role }[] = [
  { email: 'admin@demo.example.com', fullName: 'Ada Admin', role: 'admin' },
  { email: 'lead@demo.example.com', fullName: 'Lena Lead', role: 'marketing_lead' },
  { email: 'marketer@demo.example.com', fullName: 'Milo Marketer', role: 'lifecycle_marketer' },
];
const segments: { name: string; conditions: Condition[] }[] = [
  { name: 'German big spenders', conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }, { field: 'totalAmountSpent', operator: 'gte', value: 1000 }] },
  { name: 'Lapsing regulars', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 10 }, { field: 'lastActivityDays', operator: 'gt', value: 60 }] },
  { name: 'New this month', conditions: [{ field: 'lastActivityDays', operator: 'lte', value: 30 }, { field: 'totalTransactions', operator: 'lte', value: 2 }] },
];

async function prepare(): Promise<void> {
  if (existsSync(path)) return;
  seedDatabase(path, 5000, { seed: 2026, quiet: true });
  const engine = openSqliteEngine(path);
  const users = createUserRepository(engine);
  const passwordHash = await hashPassword(PASSWORD);
  const created: User[] = [];
  for (const p of people) created.push(await users.insertUser({ ...p, passwordHash }, new Date()));
  const { audience } = openCustomers(engine);
  const saved = createSegmentRepository(engine);
  for (const s of segments) {
    const matchCount = await audience.count(compileConditions(s.conditions, new Date()));
    await saved.insertSegment({ ...s, matchCount, createdBy: created[1]!.id }, new Date());
  }
  await addDemoContent(engine, created, new Date());
  await engine.close();
}

try {
  await prepare();
  const service = await startService(loadConfig({ ...process.env, DATABASE_PATH: path }));
  process.stderr.write(
    `\nDemo running at ${service.url} on ${path} (5,000 customers, 3 segments, 5 campaigns). Open ${service.url}/ in a browser and sign in with password "${PASSWORD}" as:\n` +
      people.map((p) => `  ${p.email.padEnd(28)} ${p.role}`).join('\n') +
      `\nExample: curl -s -X POST ${service.url}/v1/auth/sign-in -H 'content-type: application/json' -d '{"email":"lead@demo.example.com","password":"${PASSWORD}"}'\n\n`,
  );
  const stop = () => void service.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
