// `npm run user -- <command>`: manage users on the configured database, also while the server runs.
import { parseArgs } from 'node:util';
import * as v from 'valibot';
import { ConfigError, loadConfig } from '../src/config.ts';
import { openServiceEngine, usersOn } from '../src/storage.ts';
import { AppError } from '../src/domain/errors.ts';
import { hashPassword } from '../src/domain/passwords.ts';
import { Email, TrimmedText } from '../src/schemas/common.ts';
import { Password, Role } from '../src/schemas/users.ts';

const USAGE = `Usage: npm run user -- <command> [options]
  create       --email E --name N --role R [--password P]   create a user (prints it as JSON)
  list                                                       list users as JSON lines
  set-role     --email E --role R                            change a user's role
  set-password --email E [--password P]                      set a new password
  deactivate   --email E                                     deactivate and revoke the user's sessions
Without --password the password is read from the terminal, or from the first line of standard input.
Roles: marketing_lead, lifecycle_marketer, admin. The database is DATABASE_URL (PostgreSQL) when set, else DATABASE_PATH (default ./data/campaigns.db).`;

class UsageError extends Error {}

function check<T>(option: string, schema: v.GenericSchema<unknown, T>, value: unknown): T {
  if (value === undefined) throw new UsageError(`--${option} is required`);
  const result = v.safeParse(schema, value);
  if (!result.success) throw new UsageError(`--${option}: ${result.issues[0].message}`);
  return result.output;
}

async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    process.stderr.write('Password (8-128 characters, not echoed): ');
    process.stdin.setRawMode(true);
    return new Promise((resolve) => {
      let typed = '';
      const onData = (chunk: Buffer) => {
        for (const char of chunk.toString('utf8')) {
          if (char === '\r' || char === '\n') {
            process.stdin.setRawMode(false);
            process.stdin.off('data', onData);
            process.stdin.pause();
            process.stderr.write('\n');
            resolve(typed);
            return;
          }
          if (char === '\u0003') process.exit(130);
          typed = char === '\u007f' ? typed.slice(0, -1) : typed + char;
        }
      };
      process.stdin.on('data', onData);
    });
  }
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  return input.split(/\r?\n/)[0] ?? '';
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { email: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' }, password: { type: 'string' }, help: { type: 'boolean' } },
  });
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig(process.env);
  // The service's own opening: on PostgreSQL the schema is made or upgraded first, as a starting instance would.
  const { engine } = await openServiceEngine(config, () => {});
  const users = usersOn(engine);
  const now = new Date();
  const existing = async () => {
    const email = check('email', Email, values.email);
    const found = await users.findCredentials(email);
    if (!found) throw new UsageError(`no user with the email ${email}`);
    return found.user;
  };
  const password = async () => check('password', Password, values.password ?? (await readPassword()));

  try {
    switch (command) {
      case 'create': {
        const email = check('email', Email, values.email);
        const fullName = check('name', TrimmedText(1, 120), values.name);
        const role = check('role', Role, values.role);
        const user = await users.insertUser({ email, fullName, role, passwordHash: await hashPassword(await password()) }, now);
        process.stdout.write(`${JSON.stringify(user)}\n`);
        break;
      }
      case 'list':
        for (const user of await users.listUsers()) process.stdout.write(`${JSON.stringify(user)}\n`);
        break;
      case 'set-role': {
        const user = await existing();
        process.stdout.write(`${JSON.stringify(await users.updateUser(user.id, { role: check('role', Role, values.role) }, now))}\n`);
        break;
      }
      case 'set-password': {
        const user = await existing();
        await users.updateUser(user.id, { passwordHash: await hashPassword(await password()) }, now);
        process.stdout.write(`Password changed for ${user.email}.\n`);
        break;
      }
      case 'deactivate': {
        const user = await existing();
        await users.updateUser(user.id, { isActive: false }, now);
        process.stdout.write(`Deactivated ${user.email}; their sessions are revoked.\n`);
        break;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } finally {
    await engine.close();
  }
}

main().catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`error: ${error.message}\n${error instanceof UsageError ? `\n${USAGE}\n` : ''}`);
    process.exit(2);
  }
  throw error;
});
