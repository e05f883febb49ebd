// SQL for users. Returns users in their public shape; knows no HTTP.
import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { Role } from '../domain/auth-user.ts';
import { isUniqueViolation, type Db } from './database.ts';

/** A user as the API shows it: exactly these fields. */
export interface User {
  id: string;
  fullName: string;
  email: string;
  role: Role;
  isActive: boolean;
  createdAt: string;
}

export interface NewUser {
  email: string;
  fullName: string;
  role: Role;
  passwordHash: string;
}

export interface UserChanges {
  fullName?: string;
  role?: Role;
  isActive?: boolean;
  passwordHash?: string;
}

interface UserRow {
  id: string;
  email: string;
  full_name: string;
  role: Role;
  is_active: number;
  password_hash: string;
  created_at: number;
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    fullName: row.full_name,
    email: row.email,
    role: row.role,
    isActive: row.is_active === 1,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

export type UserRepository = ReturnType<typeof createUserRepository>;

/** Returns the user queries, prepared once so a typo fails at start-up. */
export function createUserRepository(db: Db) {
  const byId = db.prepare<[string], UserRow>('SELECT * FROM users WHERE id = ?');
  const byEmail = db.prepare<[string], UserRow>('SELECT * FROM users WHERE email = ?');
  const all = db.prepare<[], UserRow>('SELECT * FROM users ORDER BY created_at, id');
  const countAll = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM users');
  const insert = db.prepare(
    `INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
     VALUES (@id, @email, @fullName, @role, 1, @passwordHash, @now, @now)`,
  );
  const activeAdmins = db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM users WHERE role = 'admin' AND is_active = 1`);
  const revokeTokens = db.prepare(
    `UPDATE refresh_tokens SET revoked_at = ?, revoked_reason = 'deactivated' WHERE user_id = ? AND revoked_at IS NULL`,
  );
  const update = db.prepare(
    `UPDATE users SET full_name = coalesce(@fullName, full_name), role = coalesce(@role, role),
       is_active = coalesce(@isActive, is_active), password_hash = coalesce(@passwordHash, password_hash),
       updated_at = @now
     WHERE id = @id`,
  );

  return {
    /** Returns the user with this id, or undefined. */
    findUser(id: string): User | undefined {
      const row = byId.get(id);
      return row && toUser(row);
    },

    /** Returns the user with this (normalized) email and their password hash, or undefined. */
    findCredentials(email: string): { user: User; passwordHash: string } | undefined {
      const row = byEmail.get(email);
      return row && { user: toUser(row), passwordHash: row.password_hash };
    },

    /** Returns every user, oldest first. */
    listUsers(): User[] {
      return all.all().map(toUser);
    },

    countUsers(): number {
      return countAll.get()?.n ?? 0;
    },

    /** Stores a new active user and returns it; throws `conflict` when the email is taken. */
    insertUser(user: NewUser, now: Date): User {
      const id = randomUUID();
      try {
        insert.run({ ...user, id, now: now.getTime() });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('conflict', `A user with the email ${user.email} already exists.`);
        throw error;
      }
      return toUser(byId.get(id)!);
    },

    /**
     * Applies the changes in one transaction and returns the user. Deactivation also revokes the user's
     * refresh tokens. Throws `not_found` for an unknown id and `conflict` when no active admin would remain.
     */
    updateUser(id: string, changes: UserChanges, now: Date): User {
      return db.transaction(() => {
        const before = byId.get(id);
        if (!before) throw new AppError('not_found', `No user with id ${id}.`);
        update.run({
          id,
          fullName: changes.fullName ?? null,
          role: changes.role ?? null,
          isActive: changes.isActive === undefined ? null : Number(changes.isActive),
          passwordHash: changes.passwordHash ?? null,
          now: now.getTime(),
        });
        if (before.role === 'admin' && before.is_active === 1 && activeAdmins.get()!.n === 0) {
          throw new AppError('conflict', 'This is the last active admin; make another user admin first.');
        }
        if (changes.isActive === false) revokeTokens.run(now.getTime(), id);
        return toUser(byId.get(id)!);
      }).immediate();
    },
  };
}
