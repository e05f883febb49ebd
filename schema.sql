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

-- Version 2: customers and their live aggregates.

CREATE TABLE IF NOT EXISTS customers (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT, -- AUTOINCREMENT: a deleted customer's id is never handed out again
  name               TEXT NOT NULL,
  email              TEXT NOT NULL,                     -- lower-cased; unique through customers_by_email
  country            TEXT NOT NULL,                     -- as entered, trimmed
  country_key        TEXT NOT NULL,                     -- lower-cased country: what filters and segments compare
  total_transactions INTEGER NOT NULL CHECK (total_transactions >= 0),
  amount_cents       INTEGER NOT NULL CHECK (amount_cents >= 0), -- totalAmountSpent in cents, so sums stay exact
  last_activity_at   INTEGER NOT NULL,
  status             TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'churned')),
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
) STRICT;

-- One customer per email: customers.create and customers.import detect duplicates through it (ON CONFLICT).
CREATE UNIQUE INDEX IF NOT EXISTS customers_by_email ON customers (email);
-- customers.list default sort (lastActivityDate), and its status and country filters, which read the index in
-- order and skip non-matching rows; each entry ends with the rowid, which is the id tie-break. Also
-- customers.health: the active customers of the stale cut-off day who went idle before the cut-off instant.
CREATE INDEX IF NOT EXISTS customers_by_activity ON customers (last_activity_at);
-- customers.list filtered by country in the default order: a small country would otherwise mean walking many
-- rows of customers_by_activity per page.
CREATE INDEX IF NOT EXISTS customers_by_country ON customers (country_key, last_activity_at);
-- customers.list sort=totalAmountSpent, and customers.top (highest spend first).
CREATE INDEX IF NOT EXISTS customers_by_amount ON customers (amount_cents);
-- customers.list sort=totalTransactions.
CREATE INDEX IF NOT EXISTS customers_by_transactions ON customers (total_transactions);
-- customers.list sort=name, alphabetical without regard to case.
CREATE INDEX IF NOT EXISTS customers_by_name ON customers (name COLLATE NOCASE);

-- customers.list search: substrings of "name\nemail" of three characters or more, case-insensitive. Contentless:
-- it stores only the trigram index, not a second copy of the text.
CREATE VIRTUAL TABLE IF NOT EXISTS customer_search USING fts5 (
  text, content = '', contentless_delete = 1, tokenize = 'trigram'
);
-- FTS5 merges a level of its index a little at each write once the level holds 4 segments, but merges all of it at
-- once when it holds 16 ("crisismerge"). A seeded base is one large segment on the lowest level, so that whole merge
-- landed on one import (seconds). With 512 the gradual merge finishes first. A setting stored with the table.
INSERT INTO customer_search (customer_search, rank) VALUES ('crisismerge', 512);
-- Segments merged 16 at a time instead of 4: imports add a segment a transaction, and each row's trigrams are then
-- rewritten about half as often. Into a base of a million, 2,500-row transactions went 15,600 -> 19,000 rows/s; a
-- search reads more segments (after a million rows so imported, 1-2 ms where it took 1, the same at 80 ms).
INSERT INTO customer_search (customer_search, rank) VALUES ('automerge', 16);

-- Aggregates kept up to date in the same transaction as every customer write, so reads never scan customers.
-- customers.kpis, customers.health, customers.top totalValue, customers.list total without filters or by status.
CREATE TABLE IF NOT EXISTS customer_totals (
  status       TEXT PRIMARY KEY,
  customers    INTEGER NOT NULL,
  amount_cents INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- customers.activityTrend (days summed per month) and customers.health stale actives (whole days before the cut-off).
CREATE TABLE IF NOT EXISTS customer_days (
  status       TEXT NOT NULL,
  day          INTEGER NOT NULL,                 -- UTC days since 1970-01-01 of last activity
  customers    INTEGER NOT NULL,
  amount_cents INTEGER NOT NULL,
  PRIMARY KEY (status, day)
) STRICT, WITHOUT ROWID;

-- customers.list total when filtered by country.
CREATE TABLE IF NOT EXISTS customer_countries (
  country_key  TEXT NOT NULL,
  status       TEXT NOT NULL,
  customers    INTEGER NOT NULL,
  PRIMARY KEY (country_key, status)
) STRICT, WITHOUT ROWID;

-- A counter bumped in every transaction that writes customers. The in-memory audience index compares it with the
-- generation it holds, so writes by another process (a seed run) make it reload instead of counting stale data.
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Saved audiences. Conditions are kept as one JSON array (each with its id, in order): they are only ever read and
-- written whole, and counted in memory, never queried by SQL.
CREATE TABLE IF NOT EXISTS segments (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  conditions  TEXT NOT NULL CHECK (json_valid(conditions) AND json_type(conditions) = 'array'),
  match_count INTEGER NOT NULL CHECK (match_count >= 0),
  created_by  TEXT REFERENCES users (id) ON DELETE SET NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;

-- GET /v1/segments: newest first.
CREATE INDEX IF NOT EXISTS segments_by_created ON segments (created_at, id);

-- Version 3: campaigns, their review trail, idempotent requests and assistant chat.

-- Drafted campaigns. segment_id is no reference: deleting a segment keeps its campaigns with the id and the name
-- the segment had when the campaign was drafted. seq orders them newest first.
CREATE TABLE IF NOT EXISTS campaigns (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  id             TEXT NOT NULL UNIQUE,
  segment_id     TEXT NOT NULL,
  segment_name   TEXT NOT NULL,
  objective      TEXT NOT NULL,
  channel        TEXT NOT NULL CHECK (channel IN ('sms', 'email', 'push')),
  tone           TEXT NOT NULL CHECK (tone IN ('professional', 'friendly', 'urgent', 'promotional')),
  title          TEXT NOT NULL CHECK (length(title) > 0),
  message        TEXT NOT NULL CHECK (length(message) > 0),
  call_to_action TEXT NOT NULL CHECK (length(call_to_action) > 0),
  status         TEXT NOT NULL CHECK (status IN ('draft', 'in_review', 'approved', 'sent')),
  model          TEXT NOT NULL,
  created_by     TEXT NOT NULL,                  -- a user id; kept when the user is gone
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  -- Version 5: the audience frozen at approval, kept while approved or sent; NULL before, and reopening clears it.
  audience_conditions  TEXT CHECK (audience_conditions IS NULL OR json_valid(audience_conditions)),
  audience_description TEXT,
  audience_size        INTEGER CHECK (audience_size IS NULL OR audience_size >= 0),
  approved_at          INTEGER
) STRICT;

-- campaigns.list filtered by status, by channel, or by segment, newest first.
CREATE INDEX IF NOT EXISTS campaigns_by_status ON campaigns (status, seq);
CREATE INDEX IF NOT EXISTS campaigns_by_channel ON campaigns (channel, seq);
CREATE INDEX IF NOT EXISTS campaigns_by_segment ON campaigns (segment_id, seq);

-- Every status change of a campaign (and its creation, from NULL to draft): who, when, from, to, why.
CREATE TABLE IF NOT EXISTS campaign_events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  campaign_id TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  from_status TEXT,
  to_status   TEXT NOT NULL,
  note        TEXT,
  actor_id    TEXT NOT NULL,
  at          INTEGER NOT NULL
) STRICT;

-- campaigns.events, oldest first; and the cascade when a draft is deleted.
CREATE INDEX IF NOT EXISTS campaign_events_by_campaign ON campaign_events (campaign_id, id);

-- Version 6: every copy a campaign has had, numbered from 1: generated, edited, revised, restored, and variants
-- offered beside the current copy. campaigns.versions lists them oldest first by the primary key.
CREATE TABLE IF NOT EXISTS campaign_versions (
  campaign_id    TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  version        INTEGER NOT NULL CHECK (version >= 1),
  title          TEXT NOT NULL CHECK (length(title) > 0),
  message        TEXT NOT NULL CHECK (length(message) > 0),
  call_to_action TEXT NOT NULL CHECK (length(call_to_action) > 0),
  source         TEXT NOT NULL CHECK (source IN ('generated', 'revised', 'edited', 'variant', 'restored')),
  instruction    TEXT,                           -- what the marketer asked for (revised, variant)
  model          TEXT,                           -- which generator wrote it (generated, revised, variant)
  created_by     TEXT NOT NULL,                  -- a user id; kept when the user is gone
  created_at     INTEGER NOT NULL,
  PRIMARY KEY (campaign_id, version)
) STRICT, WITHOUT ROWID;

-- Requests made with an Idempotency-Key: a running marker, then the stored successful reply. Kept 24 hours.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id      TEXT NOT NULL,
  key          TEXT NOT NULL,
  operation    TEXT NOT NULL,
  request_hash TEXT NOT NULL,                    -- SHA-256 of the canonical JSON of the body
  owner        TEXT,                             -- the process running it; NULL once the reply is stored
  status       INTEGER,
  body         TEXT,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (user_id, key)
) STRICT, WITHOUT ROWID;

-- Sweeping expired keys.
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);

-- Assistant chat threads, each owned by one user.
CREATE TABLE IF NOT EXISTS chat_threads (
  id            TEXT PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title         TEXT NOT NULL,
  title_is_auto INTEGER NOT NULL CHECK (title_is_auto IN (0, 1)), -- still the default title: the first message renames it
  message_count INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) STRICT;

-- chat.threads.list: one user's threads, most recently updated first.
CREATE INDEX IF NOT EXISTS chat_threads_by_user ON chat_threads (user_id, updated_at, id);

CREATE TABLE IF NOT EXISTS chat_messages (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  thread_id  TEXT NOT NULL REFERENCES chat_threads (id) ON DELETE CASCADE,
  role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  content    TEXT NOT NULL,
  model      TEXT,                               -- assistant messages only
  created_at INTEGER NOT NULL,
  truncated  INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)) -- 1: the reply was cut at the token budget
) STRICT;

-- chat.messages.list oldest first, the last turns for a prompt, and the cascade on thread delete.
CREATE INDEX IF NOT EXISTS chat_messages_by_thread ON chat_messages (thread_id, seq);

-- What the assistant proposed in a reply (section "An assistant that acts"): never run by the model, only by the
-- thread's owner confirming it, which stores what the operation answered so a second confirm answers the same.
CREATE TABLE IF NOT EXISTS chat_actions (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  message_id TEXT NOT NULL REFERENCES chat_messages (id) ON DELETE CASCADE,
  thread_id  TEXT NOT NULL REFERENCES chat_threads (id) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('save_segment', 'draft_campaign')),
  input      TEXT NOT NULL CHECK (json_valid(input)),  -- the operation's body, as validated when proposed
  summary    TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('proposed', 'confirmed', 'rejected')),
  result     TEXT CHECK (result IS NULL OR json_valid(result)), -- confirmed: what the operation answered
  result_id  TEXT,                                      -- confirmed: the id of the segment or campaign made
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

-- A message's proposals in order, and the cascade when its message goes.
CREATE INDEX IF NOT EXISTS chat_actions_by_message ON chat_actions (message_id, seq);
CREATE INDEX IF NOT EXISTS chat_actions_by_thread ON chat_actions (thread_id);

-- CSV import jobs (customers.imports.*), run one at a time in arrival order on the import writer thread. The counts
-- move in the same transaction as the rows they count, so after a crash they say exactly what was committed.
CREATE TABLE IF NOT EXISTS import_jobs (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT, -- arrival order
  id              TEXT NOT NULL UNIQUE,
  status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
  file_name       TEXT,
  columns         TEXT NOT NULL,                     -- JSON: the file's column index of each field, from its header row
  ignored_columns TEXT NOT NULL,                     -- JSON array of the header names no field took
  bytes_read      INTEGER NOT NULL DEFAULT 0,
  rows_read       INTEGER NOT NULL DEFAULT 0,
  imported        INTEGER NOT NULL DEFAULT 0,
  updated         INTEGER NOT NULL DEFAULT 0,        -- rows that replaced a stored customer's fields (on_existing 'update')
  skipped         INTEGER NOT NULL DEFAULT 0,
  on_existing     TEXT NOT NULL DEFAULT 'skip' CHECK (on_existing IN ('skip', 'update')),
  created_by      TEXT NOT NULL,                     -- the user id; kept when the user is deleted
  started_at      INTEGER NOT NULL,
  finished_at     INTEGER
) STRICT;

-- customers.imports.list newest first; the restart finds the jobs still running.
CREATE INDEX IF NOT EXISTS import_jobs_by_status ON import_jobs (status);

-- Every skipped row of a job, for failures.csv in line order.
CREATE TABLE IF NOT EXISTS import_failures (
  job_seq INTEGER NOT NULL REFERENCES import_jobs (seq) ON DELETE CASCADE,
  line    INTEGER NOT NULL,                          -- the row's line in the file; the header is line 1
  email   TEXT,
  reason  TEXT NOT NULL,
  PRIMARY KEY (job_seq, line)
) STRICT, WITHOUT ROWID;

-- Webhook endpoints (webhooks.*), managed by admins. The signing secrets are kept as given out: signing needs them.
CREATE TABLE IF NOT EXISTS webhooks (
  seq                         INTEGER PRIMARY KEY AUTOINCREMENT, -- creation order
  id                          TEXT NOT NULL UNIQUE,
  url                         TEXT NOT NULL,
  events                      TEXT NOT NULL CHECK (json_valid(events)), -- JSON array of the event types it receives
  description                 TEXT,
  enabled                     INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  disabled_reason             TEXT,                              -- set when the service disabled it (a 410 answer)
  secret                      TEXT NOT NULL,                     -- whsec_ + base64 of 32 random bytes
  previous_secret             TEXT,                              -- the secret before the last rotation, still signing
  previous_secret_expires_at  INTEGER,                           -- until then (24 hours after the rotation)
  created_at                  INTEGER NOT NULL,
  updated_at                  INTEGER NOT NULL
) STRICT;

-- The webhook outbox: each event written in the transaction of the change that caused it, with the exact body sent.
-- An event is stored only when some endpoint receives it, and removed with the last endpoint that did.
CREATE TABLE IF NOT EXISTS webhook_events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,                               -- the webhook-id header, the same on every retry
  type       TEXT NOT NULL,
  body       TEXT NOT NULL,                                      -- JSON { type, timestamp, data }, signed as is
  created_at INTEGER NOT NULL
) STRICT;

-- One delivery per event and endpoint: its attempts so far and the outcome of the last one.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,             -- creation order
  id              TEXT NOT NULL UNIQUE,
  webhook_seq     INTEGER NOT NULL REFERENCES webhooks (seq) ON DELETE CASCADE,
  event_seq       INTEGER NOT NULL REFERENCES webhook_events (seq),
  status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt         INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0), -- attempts made
  response_status INTEGER,                                       -- of the last attempt, when the endpoint answered
  error           TEXT,                                          -- why the last attempt failed
  created_at      INTEGER NOT NULL,
  next_attempt_at INTEGER,                                       -- pending only: when the next attempt is due
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
) STRICT;

-- webhooks.deliveries: one endpoint's deliveries newest first, and their count; the cascade when an endpoint is deleted.
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_webhook ON webhook_deliveries (webhook_seq, seq);

-- The dispatcher: an endpoint's pending deliveries, the earliest due first; failing them all when it is disabled.
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (webhook_seq, next_attempt_at) WHERE status = 'pending';

-- The dispatcher's next wake-up: the earliest pending delivery due later.
CREATE INDEX IF NOT EXISTS webhook_deliveries_next ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- Removing the events no delivery refers to any more (after an endpoint is deleted); the foreign key's check.
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_event ON webhook_deliveries (event_seq);
