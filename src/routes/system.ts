// Health check and the machine description.
import * as v from 'valibot';
import type { Db } from '../db/database.ts';
import { AppError } from '../domain/errors.ts';
import { buildOpenApi } from '../http/openapi.ts';
import { publicOperation, type Route } from '../http/operation.ts';

/** These endpoints take no parameters: a client sending some has a wrong idea of them, which a 400 tells it. */
const NoParameters = v.strictObject({}, 'Takes no query parameters.');

/** Returns `/health` and `/v1/openapi.json`; the document is built once, on first request. */
export function systemOperations({ db, routes }: { db: Db; routes: () => readonly Route[] }) {
  const ping = db.prepare('SELECT 1');
  let document: unknown;

  const health = publicOperation({
    operationId: 'system.health',
    summary: 'Answers when the database answers.',
    tag: 'system',
    query: NoParameters,
    response: v.object({ status: v.literal('ok') }),
    handle() {
      try {
        ping.get();
      } catch {
        throw new AppError('internal_error', 'The database does not answer.');
      }
      return { status: 'ok' };
    },
  });

  const openapi = publicOperation({
    operationId: 'system.openapi',
    summary: 'This document: OpenAPI 3.1.',
    tag: 'system',
    query: NoParameters,
    response: v.record(v.string(), v.unknown()),
    handle() {
      document ??= buildOpenApi(routes());
      return document;
    },
  });

  return { health, openapi };
}
