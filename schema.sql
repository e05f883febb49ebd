-- The single description of the tables. Applied on every start: every statement is idempotent.
-- Upgrades of existing databases run first, in src/db/database.ts, keyed by PRAGMA user_version.
-- Times are integers: milliseconds since the Unix epoch, UTC.

CREATE TABLE IF NOT EXISTS users (
  id            TEXT PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE,            -- lower-cased; sign-in finds users by it
  full_name     TEXT NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('marketing_lead', 'lifecycle_marketer', 'admin')),
  is_active     INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
  password_hash TEXT NOT NULL,                   -- scrypt$N$r$p$salt$key
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS refresh_tokens (
  token_hash     TEXT PRIMARY KEY,               -- SHA-256 of the token; the token itself is never stored
  family_id      TEXT NOT NULL,                  -- every token descending from one sign-in
  user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  revoked_at     INTEGER,
  revoked_reason TEXT CHECK (revoked_reason IN ('exchanged', 'signed_out', 'reused', 'deactivated'))
) STRICT, WITHOUT ROWID;

-- Revoking a whole family when a token is presented twice.
CREATE INDEX IF NOT EXISTS refresh_tokens_by_family ON refresh_tokens (family_id);
-- Revoking a user's tokens on deactivation, and pruning their expired ones at sign-in.
CREATE INDEX IF NOT EXISTS refresh_tokens_by_user ON refresh_tokens (user_id, expires_at);
