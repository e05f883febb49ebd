// The admin created on the first start of an empty database.
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { ConfigError, type Config } from './config.ts';
import type { UserRepository } from './db/users.ts';
import { hashPassword } from './domain/passwords.ts';
import { Email, TrimmedText } from './schemas/common.ts';
import { Password } from './schemas/users.ts';

/**
 * Creates the first admin when there are no users: from ADMIN_EMAIL / ADMIN_PASSWORD / ADMIN_NAME, else
 * admin@example.com with a random password, printed once through `announce`. Throws `ConfigError` for bad values.
 */
export async function ensureFirstAdmin(users: UserRepository, admin: Config['admin'], now: Date, announce: (text: string) => void): Promise<void> {
  if (users.countUsers() > 0) return;
  const check = <T>(variable: string, schema: v.GenericSchema<unknown, T>, value: unknown): T => {
    const result = v.safeParse(schema, value);
    if (!result.success) throw new ConfigError(variable, result.issues[0].message);
    return result.output;
  };
  const email = check('ADMIN_EMAIL', Email, admin.email ?? 'admin@example.com');
  const fullName = check('ADMIN_NAME', TrimmedText(1, 120), admin.name ?? 'Administrator');
  const generated = admin.password === undefined;
  const password = check('ADMIN_PASSWORD', Password, admin.password ?? randomBytes(12).toString('base64url'));
  users.insertUser({ email, fullName, role: 'admin', passwordHash: await hashPassword(password) }, now);
  announce(
    generated
      ? `Created the first admin user. Sign in as ${email} with password ${password} (shown only this once).\n`
      : `Created the first admin user ${email} from ADMIN_EMAIL / ADMIN_PASSWORD.\n`,
  );
}
