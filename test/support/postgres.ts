// The PostgreSQL the tests of test/pg/ run against (`npm run test:pg` starts it and sets TEST_DATABASE_URL), and a
// fresh database of their own on it: two engines on one database stand for two instances of the service.
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { migratePostgres } from '../../src/db/postgres/migrate.ts';

/** The server's URL; a test file run without `npm run test:pg` stops here with what to do. */
export function serverUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run these tests with `npm run test:pg`.');
  return url;
}

/**
 * Creates a database named after `prefix` and resolves to its URL: empty, or `withSchema` a copy of the one with the
 * service's schema that `npm run test:pg` makes once (TEST_TEMPLATE_DATABASE; copying it takes a fifth of the time of
 * creating the schema).
 */
export async function createDatabase(prefix: string, { withSchema = false } = {}): Promise<string> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '')}`;
  const template = withSchema ? process.env.TEST_TEMPLATE_DATABASE : undefined;
  const server = postgres(serverUrl(), { max: 1, onnotice: () => {} });
  try {
    await server.unsafe(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await server.end();
  }
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.href;
}

/** Drops the database at `url` (made by `createDatabase`), whoever is still connected to it. */
export async function dropDatabase(url: string): Promise<void> {
  const server = postgres(serverUrl(), { max: 1, onnotice: () => {} });
  try {
    await server.unsafe(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
  } finally {
    await server.end();
  }
}

/** A fresh database with the service's schema, and `instances` engines on it (close them after the tests). */
export async function freshInstances(prefix: string, instances = 2): Promise<PostgresEngine[]> {
  const url = await createDatabase(prefix);
  const engines = Array.from({ length: instances }, () => new PostgresEngine(url));
  await migratePostgres(engines[0]!);
  return engines;
}
