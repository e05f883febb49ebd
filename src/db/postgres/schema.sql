-- The tables on PostgreSQL 15: the same tables, columns, keys, checks and indexes as ../../../schema.sql (SQLite's,
-- the authority: a change there is made here too), plus the few tables only PostgreSQL needs (at the end). Applied
-- by migrate.ts on every start, under an advisory lock: every statement is idempotent. Its version is the row of
-- schema_version, a series of its own (1, 2, ...), unrelated to SQLite's PRAGMA user_version.
--
-- Types are chosen so that a row reads the same on both engines and the row mappers are shared:
-- - ids stay TEXT (uuids) where SQLite has TEXT; SQLite's INTEGER PRIMARY KEY AUTOINCREMENT becomes a bigint identity
--   (sequences never hand out a number twice, as AUTOINCREMENT does not). GENERATED ALWAYS: only a statement that
--   says OVERRIDING SYSTEM VALUE (moving a SQLite database, which then moves the sequence on with setval) sets one.
-- - instants stay BIGINT milliseconds since the Unix epoch, UTC; so do money in cents and the counts that can grow.
--   postgres.js returns int8 as a string unless told otherwise: the engine parses it to a number (all of these fit
--   in 2^53).
-- - booleans stay INTEGER 0/1 with the same CHECK as in SQLite, not boolean, so mappers keep comparing with 1.
-- - JSON stays TEXT, checked by casting it to json (which only parses: no second, reordered copy as jsonb would
--   keep). SQL never looks inside these columns, the webhook bodies are signed byte for byte, and the mappers parse
--   the same text on both engines. A value that does not parse fails with 22P02 rather than a check violation.
-- - Text that statements sort by (ids as tie-breaks, names, country keys) is COLLATE "C": SQLite orders text by its
--   bytes, and so does "C", whatever locale the database was created with. (Compared with a column of the default
--   collation, the "C" side decides: no conflict.)

CREATE TABLE IF NOT EXISTS users (
  id            TEXT COLLATE "C" PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE,            -- lower-cased; sign-in finds users by it
  full_name     TEXT NOT NULL,
  role          TEXT NOT NULL CHECK (role IN ('marketing_lead', 'lifecycle_marketer', 'admin')),
  is_active     INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
  password_hash TEXT NOT NULL,                   -- scrypt$N$r$p$salt$key
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS refresh_tokens (
  token_hash     TEXT PRIMARY KEY,               -- SHA-256 of the token; the token itself is never stored
  family_id      TEXT NOT NULL,                  -- every token descending from one sign-in
  user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at     BIGINT NOT NULL,
  expires_at     BIGINT NOT NULL,
  revoked_at     BIGINT,
  revoked_reason TEXT CHECK (revoked_reason IN ('exchanged', 'signed_out', 'reused', 'deactivated'))
);

-- Revoking a whole family when a token is presented twice.
CREATE INDEX IF NOT EXISTS refresh_tokens_by_family ON refresh_tokens (family_id);
-- Revoking a user's tokens on deactivation, and pruning their expired ones at sign-in.
CREATE INDEX IF NOT EXISTS refresh_tokens_by_user ON refresh_tokens (user_id, expires_at);

-- Customers and their live aggregates.

CREATE TABLE IF NOT EXISTS customers (
  id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- a deleted customer's id is never handed out again
  name               TEXT COLLATE "C" NOT NULL,
  email              TEXT NOT NULL,                     -- lower-cased; unique through customers_by_email
  country            TEXT NOT NULL,                     -- as entered, trimmed
  country_key        TEXT COLLATE "C" NOT NULL,         -- lower-cased country: what filters and segments compare
  total_transactions BIGINT NOT NULL CHECK (total_transactions >= 0),
  amount_cents       BIGINT NOT NULL CHECK (amount_cents >= 0), -- totalAmountSpent in cents, so sums stay exact
  last_activity_at   BIGINT NOT NULL,
  status             TEXT NOT NULL CHECK (status IN ('active', 'inactive', 'churned')),
  created_at         BIGINT NOT NULL,
  updated_at         BIGINT NOT NULL
);

-- The sort indexes end with id: in SQLite every entry ends with the rowid, the id tie-break of customers.list, and
-- PostgreSQL needs it said to read the index in the order `ORDER BY x, id` asks.

-- One customer per email: customers.create and customers.import detect duplicates through it (ON CONFLICT).
CREATE UNIQUE INDEX IF NOT EXISTS customers_by_email ON customers (email);
-- customers.list default sort (lastActivityDate) and its status filter; customers.health.
CREATE INDEX IF NOT EXISTS customers_by_activity ON customers (last_activity_at, id);
-- customers.list filtered by country in the default order.
CREATE INDEX IF NOT EXISTS customers_by_country ON customers (country_key, last_activity_at, id);
-- customers.list sort=totalAmountSpent, and customers.top (highest spend first).
CREATE INDEX IF NOT EXISTS customers_by_amount ON customers (amount_cents, id);
-- customers.list sort=totalTransactions.
CREATE INDEX IF NOT EXISTS customers_by_transactions ON customers (total_transactions, id);
-- customers.list sort=name, alphabetical without regard to case: SQLite's COLLATE NOCASE, as lower(name) (in the
-- column's "C" collation, so byte order after folding; queries sort by `lower(name), id` to use it). NOCASE folds
-- only ASCII letters, lower() every letter: names differing in the case of a non-ASCII letter may order differently.
CREATE INDEX IF NOT EXISTS customers_by_name ON customers (lower(name), id);

-- customers.list search: SQLite's FTS5 trigram table customer_search, as a pg_trgm GIN index on the same text, name
-- and email on two lines. `name || E'\n' || email ILIKE '%' || $1 || '%'` (with %, _ and \ of the search escaped)
-- uses it for searches of three characters or more; pg_trgm folds case itself, so no lower() is needed. It is
-- kept by PostgreSQL: no statement writes a search table.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX IF NOT EXISTS customers_search ON customers USING gin ((name || E'\n' || email) gin_trgm_ops);

-- Aggregates kept up to date in the same transaction as every customer write, so reads never scan customers.
-- customers.kpis, customers.health, customers.top totalValue, customers.list total without filters or by status.
CREATE TABLE IF NOT EXISTS customer_totals (
  status       TEXT PRIMARY KEY,
  customers    BIGINT NOT NULL,
  amount_cents BIGINT NOT NULL
);

-- customers.activityTrend (days summed per month) and customers.health stale actives (whole days before the cut-off).
CREATE TABLE IF NOT EXISTS customer_days (
  status       TEXT NOT NULL,
  day          INTEGER NOT NULL,                 -- UTC days since 1970-01-01 of last activity
  customers    BIGINT NOT NULL,
  amount_cents BIGINT NOT NULL,
  PRIMARY KEY (status, day)
);

-- customers.list total when filtered by country.
CREATE TABLE IF NOT EXISTS customer_countries (
  country_key  TEXT COLLATE "C" NOT NULL,
  status       TEXT NOT NULL,
  customers    BIGINT NOT NULL,
  PRIMARY KEY (country_key, status)
);

-- Counters of the service, as in SQLite: customers_generation (one more in every transaction that writes customers;
-- on PostgreSQL its row lock also puts those transactions' commits in generation order), and the first id of a bulk
-- load that has not finished.
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value BIGINT NOT NULL
);

-- The row every customer write locks first (customers_write_turn below): it exists from the start.
INSERT INTO meta (key, value) VALUES ('customers_generation', 0) ON CONFLICT (key) DO NOTHING;

-- Saved audiences. Conditions are kept as one JSON array (each with its id, in order).
CREATE TABLE IF NOT EXISTS segments (
  id          TEXT COLLATE "C" PRIMARY KEY,
  name        TEXT NOT NULL,
  conditions  TEXT NOT NULL CHECK (json_typeof(conditions::json) = 'array'),
  match_count BIGINT NOT NULL CHECK (match_count >= 0),
  created_by  TEXT REFERENCES users (id) ON DELETE SET NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);

-- GET /v1/segments: newest first.
CREATE INDEX IF NOT EXISTS segments_by_created ON segments (created_at, id);

-- Campaigns, their review trail, idempotent requests and assistant chat.

-- Drafted campaigns. segment_id is no reference: deleting a segment keeps its campaigns. seq orders them newest first.
CREATE TABLE IF NOT EXISTS campaigns (
  seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL,
  -- The audience frozen at approval, kept while approved or sent; NULL before, and reopening clears it.
  audience_conditions  TEXT CHECK (audience_conditions IS NULL OR audience_conditions::json IS NOT NULL),
  audience_description TEXT,
  audience_size        BIGINT CHECK (audience_size IS NULL OR audience_size >= 0),
  approved_at          BIGINT
);

-- campaigns.list filtered by status, by channel, or by segment, newest first.
CREATE INDEX IF NOT EXISTS campaigns_by_status ON campaigns (status, seq);
CREATE INDEX IF NOT EXISTS campaigns_by_channel ON campaigns (channel, seq);
CREATE INDEX IF NOT EXISTS campaigns_by_segment ON campaigns (segment_id, seq);

-- Every status change of a campaign (and its creation, from NULL to draft): who, when, from, to, why.
CREATE TABLE IF NOT EXISTS campaign_events (
  id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  campaign_id TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
  from_status TEXT,
  to_status   TEXT NOT NULL,
  note        TEXT,
  actor_id    TEXT NOT NULL,
  at          BIGINT NOT NULL
);

-- campaigns.events, oldest first; and the cascade when a draft is deleted.
CREATE INDEX IF NOT EXISTS campaign_events_by_campaign ON campaign_events (campaign_id, id);

-- Every copy a campaign has had, numbered from 1. campaigns.versions lists them oldest first by the primary key.
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
  created_at     BIGINT NOT NULL,
  PRIMARY KEY (campaign_id, version)
);

-- Requests made with an Idempotency-Key: a running marker, then the stored successful reply. Kept 24 hours.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id      TEXT NOT NULL,
  key          TEXT NOT NULL,
  operation    TEXT NOT NULL,
  request_hash TEXT NOT NULL,                    -- SHA-256 of the canonical JSON of the body
  owner        TEXT,                             -- the process running it; NULL once the reply is stored
  status       INTEGER,
  body         TEXT,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  PRIMARY KEY (user_id, key)
);

-- Sweeping expired keys.
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at);

-- Assistant chat threads, each owned by one user.
CREATE TABLE IF NOT EXISTS chat_threads (
  id            TEXT COLLATE "C" PRIMARY KEY,
  user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title         TEXT NOT NULL,
  title_is_auto INTEGER NOT NULL CHECK (title_is_auto IN (0, 1)), -- still the default title: the first message renames it
  message_count INTEGER NOT NULL DEFAULT 0,
  created_at    BIGINT NOT NULL,
  updated_at    BIGINT NOT NULL
);

-- chat.threads.list: one user's threads, most recently updated first.
CREATE INDEX IF NOT EXISTS chat_threads_by_user ON chat_threads (user_id, updated_at, id);

CREATE TABLE IF NOT EXISTS chat_messages (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  thread_id  TEXT NOT NULL REFERENCES chat_threads (id) ON DELETE CASCADE,
  role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  content    TEXT NOT NULL,
  model      TEXT,                               -- assistant messages only
  created_at BIGINT NOT NULL,
  truncated  INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)) -- 1: the reply was cut at the token budget
);

-- chat.messages.list oldest first, the last turns for a prompt, and the cascade on thread delete.
CREATE INDEX IF NOT EXISTS chat_messages_by_thread ON chat_messages (thread_id, seq);

-- What the assistant proposed in a reply: run only by the thread's owner confirming it, which stores what the
-- operation answered so a second confirm answers the same.
CREATE TABLE IF NOT EXISTS chat_actions (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  message_id TEXT NOT NULL REFERENCES chat_messages (id) ON DELETE CASCADE,
  thread_id  TEXT NOT NULL REFERENCES chat_threads (id) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('save_segment', 'draft_campaign')),
  input      TEXT NOT NULL CHECK (input::json IS NOT NULL),       -- the operation's body, as validated when proposed
  summary    TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('proposed', 'confirmed', 'rejected')),
  result     TEXT CHECK (result IS NULL OR result::json IS NOT NULL), -- confirmed: what the operation answered
  result_id  TEXT,                                                -- confirmed: the id of the segment or campaign made
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

-- A proposal being confirmed: the instance running its operation (a confirm on another instance waits for it, a
-- reject is refused) until the outcome is stored; an instance whose lease has ended (service_instances) runs no more.
ALTER TABLE chat_actions ADD COLUMN IF NOT EXISTS running_on TEXT;

-- A message's proposals in order, and the cascade when its message goes.
CREATE INDEX IF NOT EXISTS chat_actions_by_message ON chat_actions (message_id, seq);
CREATE INDEX IF NOT EXISTS chat_actions_by_thread ON chat_actions (thread_id);

-- CSV import jobs (customers.imports.*), run one at a time in arrival order. The counts move in the same transaction
-- as the rows they count, so after a crash they say exactly what was committed.
CREATE TABLE IF NOT EXISTS import_jobs (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- arrival order
  id              TEXT NOT NULL UNIQUE,
  status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
  file_name       TEXT,
  columns         TEXT NOT NULL,                     -- JSON: the file's column index of each field, from its header row
  ignored_columns TEXT NOT NULL,                     -- JSON array of the header names no field took
  bytes_read      BIGINT NOT NULL DEFAULT 0,
  rows_read       BIGINT NOT NULL DEFAULT 0,
  imported        BIGINT NOT NULL DEFAULT 0,
  updated         BIGINT NOT NULL DEFAULT 0,         -- rows that replaced a stored customer's fields (on_existing 'update')
  skipped         BIGINT NOT NULL DEFAULT 0,
  on_existing     TEXT NOT NULL DEFAULT 'skip' CHECK (on_existing IN ('skip', 'update')),
  created_by      TEXT NOT NULL,                     -- the user id; kept when the user is deleted
  started_at      BIGINT NOT NULL,
  finished_at     BIGINT
);

-- The instance that accepted a job: its upload is on that instance's disk, so that instance runs it (in arrival
-- order across the deployment); a job whose instance's lease has ended is marked interrupted by another.
ALTER TABLE import_jobs ADD COLUMN IF NOT EXISTS instance_id TEXT;

-- customers.imports.list newest first; the restart finds the jobs still running. (seq: SQLite's implicit rowid.)
CREATE INDEX IF NOT EXISTS import_jobs_by_status ON import_jobs (status, seq);

-- Every skipped row of a job, for failures.csv in line order.
CREATE TABLE IF NOT EXISTS import_failures (
  job_seq BIGINT NOT NULL REFERENCES import_jobs (seq) ON DELETE CASCADE,
  line    BIGINT NOT NULL,                           -- the row's line in the file; the header is line 1
  email   TEXT,
  reason  TEXT NOT NULL,
  PRIMARY KEY (job_seq, line)
);

-- Webhook endpoints (webhooks.*), managed by admins. The signing secrets are kept as given out: signing needs them.
CREATE TABLE IF NOT EXISTS webhooks (
  seq                         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- creation order
  id                          TEXT NOT NULL UNIQUE,
  url                         TEXT NOT NULL,
  events                      TEXT NOT NULL CHECK (events::json IS NOT NULL), -- JSON array of the event types it receives
  description                 TEXT,
  enabled                     INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  disabled_reason             TEXT,                              -- set when the service disabled it (a 410 answer)
  secret                      TEXT NOT NULL,                     -- whsec_ + base64 of 32 random bytes
  previous_secret             TEXT,                              -- the secret before the last rotation, still signing
  previous_secret_expires_at  BIGINT,                            -- until then (24 hours after the rotation)
  created_at                  BIGINT NOT NULL,
  updated_at                  BIGINT NOT NULL
);

-- The webhook outbox: each event written in the transaction of the change that caused it, with the exact body sent.
-- An event is stored only when some endpoint receives it, and removed with the last endpoint that did.
CREATE TABLE IF NOT EXISTS webhook_events (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,                               -- the webhook-id header, the same on every retry
  type       TEXT NOT NULL,
  body       TEXT NOT NULL,                                      -- JSON { type, timestamp, data }, signed as is
  created_at BIGINT NOT NULL
);

-- One delivery per event and endpoint: its attempts so far and the outcome of the last one.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- creation order
  id              TEXT NOT NULL UNIQUE,
  webhook_seq     BIGINT NOT NULL REFERENCES webhooks (seq) ON DELETE CASCADE,
  event_seq       BIGINT NOT NULL REFERENCES webhook_events (seq),
  status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempt         INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0), -- attempts made
  response_status INTEGER,                                         -- of the last attempt, when the endpoint answered
  error           TEXT,                                            -- why the last attempt failed
  created_at      BIGINT NOT NULL,
  next_attempt_at BIGINT,                                          -- pending only: when the next attempt is due
  CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
);

-- webhooks.deliveries: one endpoint's deliveries newest first, and their count; the cascade when an endpoint is deleted.
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_webhook ON webhook_deliveries (webhook_seq, seq);

-- The dispatcher: an endpoint's pending deliveries, the earliest due first; failing them all when it is disabled.
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (webhook_seq, next_attempt_at) WHERE status = 'pending';

-- The dispatcher's next wake-up: the earliest pending delivery due later.
CREATE INDEX IF NOT EXISTS webhook_deliveries_next ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- Removing the events no delivery refers to any more (after an endpoint is deleted); the foreign key's check.
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_event ON webhook_deliveries (event_seq);

-- Only on PostgreSQL.

-- The version of this schema the database holds: one row, written by migrate.ts under its advisory lock.
CREATE TABLE IF NOT EXISTS schema_version (
  one         INTEGER PRIMARY KEY DEFAULT 1 CHECK (one = 1),
  version     INTEGER NOT NULL CHECK (version >= 1),
  upgraded_at BIGINT NOT NULL
);

-- The customer change log: what every customer write did, written in that write's transaction, so each instance's
-- in-memory audience index follows every instance's writes (told by NOTIFY), and an instance that restarts or lags
-- catches up from it (`WHERE generation > $1 ORDER BY generation, seq`) instead of reloading every customer.
-- generation is meta.customers_generation as that write set it: one per transaction, committed in generation order.
-- An 'upsert' carries the customer's facts the index holds; a 'delete' only its id; a 'reload' (a seed, a move, a
-- recovered bulk load: too many rows to log one by one) tells readers to reload everything. Old entries may be
-- pruned by generation: a reader behind the oldest one left reloads.
CREATE TABLE IF NOT EXISTS customer_changes (
  generation       BIGINT NOT NULL,
  seq              BIGINT GENERATED ALWAYS AS IDENTITY,  -- the order of the changes within one generation
  op               TEXT NOT NULL CHECK (op IN ('upsert', 'delete', 'reload')),
  customer_id      BIGINT,
  country_key      TEXT COLLATE "C",
  status           TEXT CHECK (status IN ('active', 'inactive', 'churned')),
  total_transactions BIGINT,
  amount_cents     BIGINT,
  last_activity_at BIGINT,
  -- The key serves catching up and pruning; no second index slows the logging of a million-row import.
  PRIMARY KEY (generation, seq),
  CHECK ((op = 'reload') = (customer_id IS NULL)),
  CHECK ((op = 'upsert') = (country_key IS NOT NULL AND status IS NOT NULL AND total_transactions IS NOT NULL
                            AND amount_cents IS NOT NULL AND last_activity_at IS NOT NULL)),
  CHECK (op = 'upsert' OR (country_key IS NULL AND status IS NULL AND total_transactions IS NULL
                           AND amount_cents IS NULL AND last_activity_at IS NULL))
);

-- The customer change contract, kept by triggers on customers whoever writes them (a repository, a CSV job's chunk,
-- INSERT ... ON CONFLICT DO UPDATE), in the same transaction as the write: the aggregate tables stay exact as
-- SQLite's writes.ts and stats.ts keep them (customer_totals rows stay at zero; a day's or a country's row goes when
-- it counts no customer), and each transaction that changes customers takes the next customers_generation once,
-- logs one customer_changes row per changed customer with it, and notifies 'customer_changes' with it.
--
-- Locks, always in this order, so that customer writers never deadlock: the customers table's (every statement on it
-- takes that first), meta's customers_generation row before a statement touches any customer (held to commit: the
-- turns of customer writes, and commits in generation order), then the customers rows, then the aggregate rows in
-- key order. A transaction that reads customers it then writes takes the table's lock and that row first too.

-- The UTC day of an instant in epoch milliseconds, floor(ms / 86400000) (dayOf in domain/customers.ts), in integers.
-- Not STRICT, so that the planner inlines it: called as a function, it took most of a 20,000-row trigger's time.
CREATE OR REPLACE FUNCTION customer_day(ms BIGINT) RETURNS INTEGER LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (CASE WHEN ms >= 0 THEN ms / 86400000 ELSE -((-ms - 1) / 86400000) - 1 END)::integer
$$;

-- Before each statement on customers: waits for the customer writes' turn (meta's customers_generation row), unless
-- this transaction has it. The transaction-local campaigns.generation says it took its generation, so holds the row.
CREATE OR REPLACE FUNCTION customers_write_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(current_setting('campaigns.generation', true), '') = '' THEN
    PERFORM 1 FROM meta WHERE key = 'customers_generation' FOR NO KEY UPDATE;
  END IF;
  RETURN NULL;
END
$$;

-- Returns this transaction's generation: the next one at its first call (NOTIFY sent at commit), remembered in a
-- transaction-local setting (undone with a rolled-back savepoint, as the meta row's update is).
CREATE OR REPLACE FUNCTION customers_generation_taken() RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  taken BIGINT := nullif(current_setting('campaigns.generation', true), '')::bigint;
BEGIN
  IF taken IS NULL THEN
    INSERT INTO meta AS m (key, value) VALUES ('customers_generation', 1)
    ON CONFLICT (key) DO UPDATE SET value = m.value + 1
    RETURNING value INTO taken;
    PERFORM set_config('campaigns.generation', taken::text, true);
    PERFORM pg_notify('customer_changes', taken::text);
  END IF;
  RETURN taken;
END
$$;

-- After each INSERT, UPDATE or DELETE of customers (its transition tables new_rows and old_rows): when it changed any,
-- the transaction's generation; the customers counted out of the aggregates as they were (sign -1) and into them as
-- they are (sign 1), sums grouped per row and written in key order, zero sums skipped and rows left counting no
-- customer removed (but status totals) as stats.ts does; one log row per customer, an upsert with its facts or a
-- delete. The aggregate statements are one text for the three events, over the delta `d` each event reads
-- (EXECUTE sees the transition tables).
CREATE OR REPLACE FUNCTION customers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  taken BIGINT;
  delta TEXT := CASE TG_OP
    WHEN 'INSERT' THEN 'SELECT 1 AS sign, status, last_activity_at, country_key, amount_cents FROM new_rows'
    WHEN 'DELETE' THEN 'SELECT -1 AS sign, status, last_activity_at, country_key, amount_cents FROM old_rows'
    ELSE 'SELECT -1 AS sign, status, last_activity_at, country_key, amount_cents FROM old_rows
          UNION ALL SELECT 1, status, last_activity_at, country_key, amount_cents FROM new_rows'
  END;
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF NOT EXISTS (SELECT FROM old_rows) THEN RETURN NULL; END IF;
  ELSIF NOT EXISTS (SELECT FROM new_rows) THEN
    RETURN NULL; -- e.g. ON CONFLICT DO NOTHING that inserted nothing: no change, no generation
  END IF;
  taken := customers_generation_taken();

  EXECUTE format($sql$
    INSERT INTO customer_totals AS t (status, customers, amount_cents)
    SELECT d.status, sum(d.sign), sum(d.sign * d.amount_cents) FROM (%s) AS d
    GROUP BY d.status HAVING sum(d.sign) <> 0 OR sum(d.sign * d.amount_cents) <> 0
    ORDER BY d.status
    ON CONFLICT (status) DO UPDATE SET customers = t.customers + excluded.customers, amount_cents = t.amount_cents + excluded.amount_cents
  $sql$, delta);

  EXECUTE format($sql$
    INSERT INTO customer_days AS t (status, day, customers, amount_cents)
    SELECT d.status, customer_day(d.last_activity_at), sum(d.sign), sum(d.sign * d.amount_cents) FROM (%s) AS d
    GROUP BY 1, 2 HAVING sum(d.sign) <> 0 OR sum(d.sign * d.amount_cents) <> 0
    ORDER BY 1, 2
    ON CONFLICT (status, day) DO UPDATE SET customers = t.customers + excluded.customers, amount_cents = t.amount_cents + excluded.amount_cents
  $sql$, delta);

  EXECUTE format($sql$
    INSERT INTO customer_countries AS t (country_key, status, customers)
    SELECT d.country_key, d.status, sum(d.sign) FROM (%s) AS d
    GROUP BY 1, 2 HAVING sum(d.sign) <> 0
    ORDER BY 1, 2
    ON CONFLICT (country_key, status) DO UPDATE SET customers = t.customers + excluded.customers
  $sql$, delta);

  IF TG_OP <> 'INSERT' THEN
    -- Only rows customers left can have come to zero; this transaction locked them above.
    DELETE FROM customer_days AS t USING (SELECT DISTINCT status, customer_day(last_activity_at) AS day FROM old_rows) AS gone
    WHERE t.status = gone.status AND t.day = gone.day AND t.customers = 0;
    DELETE FROM customer_countries AS t USING (SELECT DISTINCT country_key, status FROM old_rows) AS gone
    WHERE t.country_key = gone.country_key AND t.status = gone.status AND t.customers = 0;
  END IF;

  IF TG_OP = 'DELETE' THEN
    INSERT INTO customer_changes (generation, op, customer_id) SELECT taken, 'delete', id FROM old_rows;
  ELSE
    INSERT INTO customer_changes (generation, op, customer_id, country_key, status, total_transactions, amount_cents, last_activity_at)
    SELECT taken, 'upsert', id, country_key, status, total_transactions, amount_cents, last_activity_at FROM new_rows;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS customers_write_turn ON customers;
CREATE TRIGGER customers_write_turn BEFORE INSERT OR UPDATE OR DELETE ON customers
  FOR EACH STATEMENT EXECUTE FUNCTION customers_write_turn();
DROP TRIGGER IF EXISTS customers_inserted ON customers;
CREATE TRIGGER customers_inserted AFTER INSERT ON customers REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION customers_changed();
DROP TRIGGER IF EXISTS customers_updated ON customers;
CREATE TRIGGER customers_updated AFTER UPDATE ON customers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION customers_changed();
DROP TRIGGER IF EXISTS customers_deleted ON customers;
CREATE TRIGGER customers_deleted AFTER DELETE ON customers REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION customers_changed();

-- Secrets the service makes for itself once and every instance shares: 'token_secret' (hex of 32 random bytes, as
-- SQLite's DATABASE_PATH.secret file holds it) when TOKEN_SECRET is not set.
CREATE TABLE IF NOT EXISTS service_secrets (
  name       TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

-- The instances of the service running on this database (several behind a proxy). Each pushes its lease's end forward
-- every INSTANCE_HEARTBEAT_MS and deletes its row when it stops; a claim whose owner's lease has ended (an instance
-- killed, or cut off from the database) is another instance's to take. Times are the database server's clock, so
-- instances whose clocks disagree still agree on who is alive.
CREATE TABLE IF NOT EXISTS service_instances (
  id         TEXT PRIMARY KEY,                  -- a UUID made at each start
  started_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL                    -- epoch ms: alive until then
);

-- Epoch milliseconds on the database server's clock (each call: clock_timestamp, not the transaction's start).
CREATE OR REPLACE FUNCTION campaigns_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE
  AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Whether the instance's lease runs: false for an unknown id (a stopped instance's, or one swept long ago).
CREATE OR REPLACE FUNCTION campaigns_instance_alive(instance TEXT) RETURNS BOOLEAN LANGUAGE sql VOLATILE
  AS $$ SELECT EXISTS (SELECT 1 FROM service_instances WHERE id = instance AND expires_at > campaigns_now_ms()) $$;

-- Sliding windows of the rate limits every instance counts together (sign-in failures, model calls): the times of a
-- key's recent events, newest last, at most the limit's count; gone once expires_at (the newest event's window end)
-- has passed.
CREATE TABLE IF NOT EXISTS rate_windows (
  scope      TEXT NOT NULL,                     -- which limit: 'sign_in', 'model_calls'
  key        TEXT NOT NULL,
  events     BIGINT[] NOT NULL,                 -- epoch ms of the events within the window
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (scope, key)
);
-- A counter's sweep of its limit's expired windows (rate-counters.ts).
CREATE INDEX IF NOT EXISTS rate_windows_by_expiry ON rate_windows (scope, expires_at);

-- Reply streams open now, per user, across instances (CHAT_STREAMS_PER_USER): a slot counts while its instance's
-- lease runs, so a killed instance's streams stop counting with it.
CREATE TABLE IF NOT EXISTS stream_slots (
  id          TEXT PRIMARY KEY,
  holder      TEXT NOT NULL,                    -- the user
  instance_id TEXT NOT NULL,
  acquired_at BIGINT NOT NULL
);
-- A user's streams, counted when they open another (stream-slots.ts).
CREATE INDEX IF NOT EXISTS stream_slots_by_holder ON stream_slots (holder);
