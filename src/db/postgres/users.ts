// The users on PostgreSQL: the same contract as ../users.ts. Concurrency PostgreSQL exposes and SQLite's single
// writer hid: two demotions of the last two admins at once (each alone sees another admin left), and two inserts of
// one email at once.
import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { LIST_USERS_SQL, toUser, type User, type UserChanges, type UserRepository, type UserRow } from '../users.ts';

/** Whether applying `changes` may leave one admin fewer: a demotion or a deactivation. */
function mayRemoveAdmin(changes: UserChanges): boolean {
  return (changes.role !== undefined && changes.role !== 'admin') || changes.isActive === false;
}

/**
 * Locks the active admins' rows, always in id order (so that two such transactions queue instead of deadlocking),
 * so that of two demotions at once the second waits, then counts the admins the first left. NO KEY UPDATE, not
 * UPDATE: a sign-in's refresh token (a foreign key to users) does not wait for it.
 */
async function lockActiveAdmins(tx: PgSql): Promise<void> {
  await tx`SELECT id FROM users WHERE role = 'admin' AND is_active = 1 ORDER BY id FOR NO KEY UPDATE`;
}

/** The advisory lock that orders first-user inserts: the key space of pg-engine.ts's leaders ("ca"), under a name of its own. */
const FIRST_USER_LOCK = [0x6361, 'first-user'] as const;

/** Returns the user statements on the PostgreSQL engine. Single reads run on the pool, outside any transaction. */
export function createPgUserRepository(engine: PostgresEngine): UserRepository {
  const { sql } = engine;

  /** Applies the changes; the last-admin check sees the update it may undo, and runs after the admins are locked. */
  const update = async (tx: PgSql, id: string, changes: UserChanges, now: number): Promise<User> => {
    if (mayRemoveAdmin(changes)) await lockActiveAdmins(tx);
    const [before] = await tx<UserRow[]>`SELECT * FROM users WHERE id = ${id}`;
    if (!before) throw new AppError('not_found', `No user with id ${id}.`);
    const [after] = await tx<UserRow[]>`
      UPDATE users SET full_name = coalesce(${changes.fullName ?? null}, full_name), role = coalesce(${changes.role ?? null}, role),
        is_active = coalesce(${changes.isActive === undefined ? null : Number(changes.isActive)}::integer, is_active),
        password_hash = coalesce(${changes.passwordHash ?? null}, password_hash), updated_at = ${now}
      WHERE id = ${id} RETURNING *`;
    if (before.role === 'admin' && before.is_active === 1) {
      const [admins] = await tx<{ n: number }[]>`SELECT count(*)::integer AS n FROM users WHERE role = 'admin' AND is_active = 1`;
      if (admins!.n === 0) throw new AppError('conflict', 'This is the last active admin; make another user admin first.');
    }
    if (changes.isActive === false) {
      await tx`UPDATE refresh_tokens SET revoked_at = ${now}, revoked_reason = 'deactivated'
        WHERE user_id = ${id} AND revoked_at IS NULL`;
    }
    return toUser(after!);
  };

  return {
    async findUser(id) {
      const [row] = await sql<UserRow[]>`SELECT * FROM users WHERE id = ${id}`;
      return row && toUser(row);
    },

    async findCredentials(email) {
      const [row] = await sql<UserRow[]>`SELECT * FROM users WHERE email = ${email}`;
      return row && { user: toUser(row), passwordHash: row.password_hash };
    },

    async listUsers() {
      return (await sql.unsafe<UserRow[]>(LIST_USERS_SQL)).map(toUser);
    },

    async countUsers() {
      const [row] = await sql<{ n: number }[]>`SELECT count(*)::integer AS n FROM users`;
      return row?.n ?? 0;
    },

    insertFirstUser(user, now) {
      // Under a transaction-level advisory lock: of instances starting at once on an empty database, the second waits
      // for the first to commit, then counts its admin (READ COMMITTED: the count, a later statement, sees it).
      return engine.write(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${FIRST_USER_LOCK[0]}, hashtext(${FIRST_USER_LOCK[1]}))`;
        const [count] = await tx<{ n: number }[]>`SELECT count(*)::integer AS n FROM users`;
        if (count!.n > 0) return undefined;
        const [row] = await tx<UserRow[]>`
          INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
          VALUES (${randomUUID()}, ${user.email}, ${user.fullName}, ${user.role}, 1, ${user.passwordHash},
            ${now.getTime()}, ${now.getTime()})
          RETURNING *`;
        return toUser(row!);
      });
    },

    insertUser(user, now) {
      // ON CONFLICT rather than catching 23505: of two inserts of one email at once, the second waits for the first
      // to commit and then inserts nothing, and a failed statement does not abort a transaction this joins.
      return engine.write(async (tx) => {
        const [row] = await tx<UserRow[]>`
          INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
          VALUES (${randomUUID()}, ${user.email}, ${user.fullName}, ${user.role}, 1, ${user.passwordHash},
            ${now.getTime()}, ${now.getTime()})
          ON CONFLICT (email) DO NOTHING RETURNING *`;
        if (!row) throw new AppError('conflict', `A user with the email ${user.email} already exists.`);
        return toUser(row);
      });
    },

    updateUser(id, changes, now) {
      return engine.write((tx) => update(tx, id, changes, now.getTime()));
    },
  };
}
