// `npm run openapi -- [--out FILE]`: writes the OpenAPI document the service serves at /v1/openapi.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { buildOpenApi } from '../src/http/openapi.ts';
import { createLogger } from '../src/http/logger.ts';

const { values } = parseArgs({ options: { out: { type: 'string' } } });
const engine = openSqliteEngine(':memory:');
const { routes } = createApp({ engine, config: loadConfig({ DATABASE_PATH: ':memory:' }), logger: createLogger('silent') });
const text = `${JSON.stringify(buildOpenApi(routes), null, 2)}\n`;
await engine.close();
if (values.out) {
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, text);
} else {
  process.stdout.write(text);
}
