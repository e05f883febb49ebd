// The admin created on the first start of an empty database.
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { ConfigError, type Config } from './config.ts';
import type { UserRepository } from './db/users.ts';
import { hashPassword, PRODUCTION_PASSWORD_COST, type PasswordCost } from './domain/passwords.ts';
import { Email, TrimmedText } from './schemas/common.ts';
import { Password } from './schemas/users.ts';

/** The first admin, checked and with its password hashed, ready to be stored in no time. */
export interface FirstAdmin {
  /**
   * Stores the admin unless a user exists by now; resolves to the line to announce, or `undefined` when none was made.
   * No hashing is left: it waits only for its write turn, so started as the port opens it has stored the admin before
   * the first request is read (unless an import job's transaction holds the database then).
   */
  create(now: Date): Promise<string | undefined>;
}

/**
 * Returns the first admin to create when there are no users (else `undefined`): from ADMIN_EMAIL / ADMIN_PASSWORD /
 * ADMIN_NAME, else admin@example.com with a random password that its announcement shows once. The slow part, hashing,
 * is done here, so `create` can run the moment the service is about to answer. Throws `ConfigError` for bad values.
 */
export async function prepareFirstAdmin(
  users: UserRepository,
  admin: Config['admin'],
  passwordCost: PasswordCost = PRODUCTION_PASSWORD_COST,
): Promise<FirstAdmin | undefined> {
  if ((await users.countUsers()) > 0) return undefined;
  const check = <T>(variable: string, schema: v.GenericSchema<unknown, T>, value: unknown): T => {
    const result = v.safeParse(schema, value);
    if (!result.success) throw new ConfigError(variable, result.issues[0].message);
    return result.output;
  };
  const email = check('ADMIN_EMAIL', Email, admin.email ?? 'admin@example.com');
  const fullName = check('ADMIN_NAME', TrimmedText(1, 120), admin.name ?? 'Administrator');
  const generated = admin.password === undefined;
  const password = check('ADMIN_PASSWORD', Password, admin.password ?? randomBytes(12).toString('base64url'));
  const passwordHash = await hashPassword(password, passwordCost);
  return {
    async create(now) {
      // `npm run user -- create`, or another instance starting at once, may have made a user while the password was
      // hashed: the admin is stored only if there is still no user.
      if (!(await users.insertFirstUser({ email, fullName, role: 'admin', passwordHash }, now))) return undefined;
      return generated
        ? `Created the first admin user. Sign in as ${email} with password ${password} (shown only this once).\n`
        : `Created the first admin user ${email} from ADMIN_EMAIL / ADMIN_PASSWORD.\n`;
    },
  };
}

/**
 * Creates the first admin when there are no users (see `prepareFirstAdmin`) and announces it once through
 * `announce`. Throws `ConfigError` for bad values.
 */
export async function ensureFirstAdmin(
  users: UserRepository,
  admin: Config['admin'],
  now: Date,
  announce: (text: string) => void,
  passwordCost: PasswordCost = PRODUCTION_PASSWORD_COST,
): Promise<void> {
  const announcement = await (await prepareFirstAdmin(users, admin, passwordCost))?.create(now);
  if (announcement) announce(announcement);
}
