// Health check, the machine description, and the settings the console shows by.
import * as v from 'valibot';
import type { Engine } from '../db/engine.ts';
import { databaseUnavailable } from '../db/unavailable.ts';
import { AppError } from '../domain/errors.ts';
import { buildOpenApi } from '../http/openapi.ts';
import { operation, publicOperation, type Route } from '../http/operation.ts';

/** These endpoints take no parameters: a client sending some has a wrong idea of them, which a 400 tells it. */
const NoParameters = v.strictObject({}, 'Takes no query parameters.');

/** The service's settings a client shows its pages by. */
export const Settings = v.object({
  currency: v.pipe(
    v.nullable(v.string()),
    v.description('The ISO 4217 code amounts are in (the CURRENCY setting), such as EUR; null when unset: amounts are then plain numbers.'),
  ),
});

/** Returns `/health`, `/v1/openapi.json` (the document built once, on first request) and `/v1/settings`. */
export function systemOperations({ engine, routes, currency }: { engine: Engine; routes: () => readonly Route[]; currency: string | undefined }) {
  let document: unknown;

  const health = publicOperation({
    operationId: 'system.health',
    summary: 'Answers when the database answers.',
    description:
      'While no database that takes writes answers (a primary down, a standby not yet promoted), `503 unavailable` ' +
      'with `Retry-After`; a proxy can take the instance out of rotation on it.',
    tag: 'system',
    query: NoParameters,
    response: v.object({ status: v.literal('ok') }),
    problems: ['unavailable'],
    async handle() {
      try {
        await engine.ping();
      } catch (error) {
        // Whatever failed, this instance cannot serve now: a balancer asking should try another, and again later.
        throw error instanceof AppError && error.code === 'unavailable' ? error : databaseUnavailable(error);
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

  const settings = operation({
    operationId: 'system.settings',
    summary: 'The settings a client shows amounts by: the currency they are in.',
    tag: 'system',
    query: NoParameters,
    response: Settings,
    handle() {
      return { currency: currency ?? null };
    },
  });

  return { health, openapi, settings };
}
