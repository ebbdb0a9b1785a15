import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/*
 * PostgreSQL's billing hot path as server-side functions: placing a hold and closing one are each a single
 * statement (one round trip, one commit) instead of a transaction of five or six statements. They do, in
 * the same order and under the same wallet row lock, what `holds.ts` does in TypeScript; the TypeScript
 * path stays the reference and the fallback (SQLite; overdue holds to expire first; a close with an
 * `companionWrites` callback; a hold already expired that must be charged anyway).
 *
 * Names used here mirror ledger.ts and limits.ts: accounts `user:<id>:available` / `user:<id>:held` /
 * `system:revenue`, subjects `app:<userId>:<appId>` / `key:<keyId>`. The money tests (concurrency, ledger
 * property, verify) compare the two paths' results through the ledger, so a drift fails them.
 */

/** Subject keys of a hold, in check order (app, then key), as `subjectKey` in limits.ts writes them. */
const SUBJECTS = `
CREATE OR REPLACE FUNCTION tollgate_subjects(p_user_id text, p_app_id text, p_key_id text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT array_remove(ARRAY[
    CASE WHEN p_app_id IS NOT NULL THEN 'app:' || p_user_id || ':' || p_app_id END,
    CASE WHEN p_key_id IS NOT NULL THEN 'key:' || p_key_id END], NULL)
$$`;

/**
 * Adds `spent` and `held` to the day, month and total counters of each subject. PL/pgSQL, not SQL: a SQL
 * function that cannot be inlined is planned again on every call; PL/pgSQL keeps its plans per connection.
 */
const COUNT = `
CREATE OR REPLACE FUNCTION tollgate_count(p_subjects text[], p_day bigint, p_month bigint, p_spent bigint, p_held bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO spend_counters (subject, period, period_start, spent, held)
  SELECT s, p.period, p.start, p_spent, p_held
    FROM unnest(p_subjects) AS s
   CROSS JOIN (VALUES ('daily', p_day), ('monthly', p_month), ('total', 0::bigint)) AS p(period, start)
  ON CONFLICT (subject, period, period_start)
  DO UPDATE SET spent = spend_counters.spent + excluded.spent, held = spend_counters.held + excluded.held;
END
$$`;

/**
 * Places a hold (holds.ts `placeHold`). `refusal` is null when placed; 'overdue' when the user has open
 * holds past their expiry (nothing written: the TypeScript path expires them first); 'limit' with the first
 * limit exceeded in decisions.md's order; 'credits' with what the wallet has available.
 *
 * Security invariant: the wallet row is locked (FOR UPDATE) before anything decided on is read, and the
 * function is one statement: no other movement of this user runs between the checks and the writes.
 */
const PLACE = `
CREATE OR REPLACE FUNCTION tollgate_place_hold(
  p_hold_id text, p_txn_id text, p_user_id text, p_app_id text, p_key_id text, p_amount bigint, p_description text,
  p_now bigint, p_expires_at bigint, p_day bigint, p_month bigint,
  OUT refusal text, OUT limit_subject text, OUT limit_period text, OUT limit_amount bigint, OUT limit_current bigint,
  OUT wallet_available bigint, OUT wallet_debt bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  w record;
  l record;
  subjects text[] := tollgate_subjects(p_user_id, p_app_id, p_key_id);
  current_spend bigint;
BEGIN
  -- The wallet lock (ledger.ts lockWallet), creating the wallet at zero when the user has none.
  SELECT wallets.*, EXISTS (SELECT 1 FROM holds h WHERE h.user_id = p_user_id AND h.status = 'open' AND h.expires_at <= p_now) AS overdue
    INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE OF wallets;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance, reserved, created_at, updated_at) VALUES (p_user_id, 0, 0, p_now, p_now) ON CONFLICT (user_id) DO NOTHING;
    SELECT wallets.*, false AS overdue INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE OF wallets;
  END IF;
  IF w.overdue THEN
    refusal := 'overdue';
    RETURN;
  END IF;

  -- Spending limits: app daily, monthly, total, then the key's; spent + held + amount <= limit.
  FOR l IN SELECT s.subject, s.period, s.amount FROM spending_limits s WHERE s.subject = ANY (subjects)
            ORDER BY array_position(subjects, s.subject), array_position(ARRAY['daily', 'monthly', 'total'], s.period) LOOP
    SELECT coalesce(sum(c.spent + c.held), 0) INTO current_spend FROM spend_counters c
     WHERE c.subject = l.subject AND c.period = l.period
       AND c.period_start = CASE l.period WHEN 'daily' THEN p_day WHEN 'monthly' THEN p_month ELSE 0 END;
    IF current_spend + p_amount > l.amount THEN
      refusal := 'limit'; limit_subject := l.subject; limit_period := l.period; limit_amount := l.amount; limit_current := current_spend;
      RETURN;
    END IF;
  END LOOP;

  -- WALLET CHECK: the one place this function decides whether the wallet can pay (pg-holds.ts walletRefusal):
  -- a wallet that owes credits (debt.ts, migration 1620) places nothing; else the available credits must cover it.
  IF w.debt > 0 OR w.balance - w.reserved < p_amount THEN
    refusal := 'credits'; wallet_available := w.balance - w.reserved; wallet_debt := w.debt;
    RETURN;
  END IF;

  INSERT INTO holds (id, user_id, app_id, key_id, amount, captured, refunded, status, description, created_at, expires_at, closed_at, period_day, period_month)
  VALUES (p_hold_id, p_user_id, p_app_id, p_key_id, p_amount, 0, 0, 'open', p_description, p_now, p_expires_at, NULL, p_day, p_month);
  INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
  VALUES (p_txn_id, 'hold', p_user_id, p_hold_id, p_description, w.balance, w.reserved + p_amount, p_now);
  IF p_amount <> 0 THEN
    INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
    VALUES (p_txn_id, 'user:' || p_user_id || ':available', -p_amount, p_now), (p_txn_id, 'user:' || p_user_id || ':held', p_amount, p_now);
    UPDATE wallets SET reserved = reserved + p_amount, updated_at = p_now WHERE user_id = p_user_id;
    PERFORM tollgate_count(subjects, p_day, p_month, 0, p_amount);
  END IF;
END
$$`;

/**
 * Settles or releases an open hold (holds.ts `closeOpenHold`): captures `least(amount, p_capture)`, releases
 * the rest, moves the counters from held to spent, and writes the call's usage record (`p_usage`, its
 * `cost` and `uncollected` filled in from the capture) — all or nothing. `closed` is false when the wallet
 * or an open hold of this user was not found; nothing is written then.
 *
 * Exactly-once invariant: the claim is `status = 'open'` → `p_status` on the hold row, under the wallet
 * lock, so two closers (in any processes) close a hold once.
 */
const CLOSE = `
CREATE OR REPLACE FUNCTION tollgate_close_hold(
  p_hold_id text, p_user_id text, p_status text, p_capture bigint, p_now bigint, p_txn_id text, p_description text,
  p_usage jsonb, p_billed bigint,
  OUT closed boolean, OUT captured bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  w record;
  h record;
  released bigint;
BEGIN
  closed := false;
  captured := 0;
  SELECT balance, reserved INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  UPDATE holds SET status = p_status, captured = LEAST(amount, p_capture), closed_at = p_now
   WHERE id = p_hold_id AND user_id = p_user_id AND status = 'open'
  RETURNING * INTO h;
  IF NOT FOUND THEN RETURN; END IF;
  released := h.amount - h.captured;

  INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
  VALUES (p_txn_id, CASE WHEN h.captured > 0 THEN 'capture' ELSE 'release' END, p_user_id, p_hold_id,
          CASE WHEN h.captured > 0 THEN p_description ELSE 'Hold released' END, w.balance - h.captured, w.reserved - h.amount, p_now);
  IF h.amount <> 0 THEN
    INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
    SELECT p_txn_id, e.account, e.amount, p_now
      FROM (VALUES ('user:' || p_user_id || ':held', -h.amount), ('system:revenue', h.captured), ('user:' || p_user_id || ':available', released)) AS e(account, amount)
     WHERE e.amount <> 0;
    UPDATE wallets SET balance = balance - h.captured, reserved = reserved - h.amount, updated_at = p_now WHERE user_id = p_user_id;
    PERFORM tollgate_count(tollgate_subjects(h.user_id, h.app_id, h.key_id), h.period_day, h.period_month, h.captured, -h.amount);
  END IF;
  IF p_usage IS NOT NULL THEN
    INSERT INTO usage_records (id, user_id, app_id, key_id, model, kind, prompt_tokens, completion_tokens, cost, latency_ms, status, hold_id, created_at, settlement, uncollected, details)
    SELECT r.id, r.user_id, r.app_id, r.key_id, r.model, r.kind, r.prompt_tokens, r.completion_tokens, h.captured, r.latency_ms, r.status, r.hold_id, r.created_at,
           NULL, GREATEST(0, p_billed - h.captured), r.details
      FROM jsonb_populate_record(NULL::usage_records, p_usage) AS r;
  END IF;
  closed := true;
  captured := h.captured;
END
$$`;

/**
 * Many placements in one statement (one transaction, one commit): each row of the arrays is placed by
 * `tollgate_place_hold`, and answered in row `n` (1-based) of the result.
 *
 * Deadlock-freedom invariant: the rows run in the order of their user, so every batch takes wallet locks
 * in the same order and two batches (in this process or another) never wait for each other in a cycle.
 * A user's rows keep their order among themselves.
 */
const PLACE_MANY = `
CREATE OR REPLACE FUNCTION tollgate_place_holds(
  p_hold_ids text[], p_txn_ids text[], p_user_ids text[], p_app_ids text[], p_key_ids text[], p_amounts bigint[], p_descriptions text[],
  p_nows bigint[], p_expires_ats bigint[], p_days bigint[], p_months bigint[])
RETURNS TABLE (n bigint, refusal text, limit_subject text, limit_period text, limit_amount bigint, limit_current bigint, wallet_available bigint,
               wallet_debt bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM unnest(p_hold_ids, p_txn_ids, p_user_ids, p_app_ids, p_key_ids, p_amounts, p_descriptions, p_nows, p_expires_ats, p_days, p_months)
           WITH ORDINALITY AS u(hold_id, txn_id, user_id, app_id, key_id, amount, description, at_now, expires_at, day_start, month_start, k)
           ORDER BY u.user_id, u.k LOOP
    RETURN QUERY SELECT t.k, r.* FROM tollgate_place_hold(t.hold_id, t.txn_id, t.user_id, t.app_id, t.key_id, t.amount, t.description,
                                                         t.at_now, t.expires_at, t.day_start, t.month_start) AS r;
  END LOOP;
END
$$`;

/** Many closes in one statement, as {@link PLACE_MANY} does placements (same order of locks). */
const CLOSE_MANY = `
CREATE OR REPLACE FUNCTION tollgate_close_holds(
  p_hold_ids text[], p_user_ids text[], p_statuses text[], p_captures bigint[], p_nows bigint[], p_txn_ids text[], p_descriptions text[],
  p_usages jsonb[], p_billeds bigint[])
RETURNS TABLE (n bigint, closed boolean, captured bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT * FROM unnest(p_hold_ids, p_user_ids, p_statuses, p_captures, p_nows, p_txn_ids, p_descriptions, p_usages, p_billeds)
           WITH ORDINALITY AS u(hold_id, user_id, status, capture, at_now, txn_id, description, usage, billed, k)
           ORDER BY u.user_id, u.k LOOP
    RETURN QUERY SELECT t.k, r.* FROM tollgate_close_hold(t.hold_id, t.user_id, t.status, t.capture, t.at_now, t.txn_id, t.description, t.usage, t.billed) AS r;
  END LOOP;
END
$$`;

/*
 * Version 2 of the four entry points (migration 1690): the same decisions and the same rows, in fewer
 * statements. A profile of the server under the concurrency-64 load (`perf` on the backends, docs/scaling.md)
 * put ~60% of PostgreSQL's CPU per call in starting, running and ending the ~19 SQL statements the two
 * functions ran per call (executor start-up, plan-cache checks, snapshots), not in the rows they write. So:
 * - the limits are read in one statement (each limit joined to its counter, the first one exceeded);
 * - a step's writes are one statement of data-modifying CTEs (hold, ledger header, entries, wallet,
 *   counters, usage record). The entries' foreign key on their header is checked at the end of that
 *   statement, when the header is in;
 * - the batch functions call the single ones as expressions (no statement per row).
 * The wallet lock is still the first thing each step does, so the security and exactly-once invariants
 * above hold unchanged; the money tests compare the results through the ledger.
 */

/** Version 2 of {@link PLACE}. */
const PLACE_V2 = `
CREATE OR REPLACE FUNCTION tollgate_place_hold(
  p_hold_id text, p_txn_id text, p_user_id text, p_app_id text, p_key_id text, p_amount bigint, p_description text,
  p_now bigint, p_expires_at bigint, p_day bigint, p_month bigint,
  OUT refusal text, OUT limit_subject text, OUT limit_period text, OUT limit_amount bigint, OUT limit_current bigint,
  OUT wallet_available bigint, OUT wallet_debt bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  w record;
  l record;
  subjects text[] := tollgate_subjects(p_user_id, p_app_id, p_key_id);
BEGIN
  -- The wallet lock (ledger.ts lockWallet), creating the wallet at zero when the user has none.
  SELECT wallets.balance, wallets.reserved, wallets.debt,
         EXISTS (SELECT 1 FROM holds h WHERE h.user_id = p_user_id AND h.status = 'open' AND h.expires_at <= p_now) AS overdue
    INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE OF wallets;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance, reserved, created_at, updated_at) VALUES (p_user_id, 0, 0, p_now, p_now) ON CONFLICT (user_id) DO NOTHING;
    SELECT wallets.balance, wallets.reserved, wallets.debt, false AS overdue INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE OF wallets;
  END IF;
  IF w.overdue THEN
    refusal := 'overdue';
    RETURN;
  END IF;

  -- Spending limits: app daily, monthly, total, then the key's; spent + held + amount <= limit. The first one
  -- exceeded, in that order, with its counter of the hold's period (none yet: 0).
  IF cardinality(subjects) > 0 THEN
    SELECT s.subject, s.period, s.amount, coalesce(c.spent + c.held, 0) AS current_spend INTO l
      FROM spending_limits s
      LEFT JOIN spend_counters c ON c.subject = s.subject AND c.period = s.period
       AND c.period_start = CASE s.period WHEN 'daily' THEN p_day WHEN 'monthly' THEN p_month ELSE 0 END
     WHERE s.subject = ANY (subjects) AND coalesce(c.spent + c.held, 0) + p_amount > s.amount
     ORDER BY array_position(subjects, s.subject), array_position(ARRAY['daily', 'monthly', 'total'], s.period)
     LIMIT 1;
    IF FOUND THEN
      refusal := 'limit'; limit_subject := l.subject; limit_period := l.period; limit_amount := l.amount; limit_current := l.current_spend;
      RETURN;
    END IF;
  END IF;

  -- WALLET CHECK: the one place this function decides whether the wallet can pay (pg-holds.ts walletRefusal):
  -- a wallet that owes credits (debt.ts, migration 1620) places nothing; else the available credits must cover it.
  IF w.debt > 0 OR w.balance - w.reserved < p_amount THEN
    refusal := 'credits'; wallet_available := w.balance - w.reserved; wallet_debt := w.debt;
    RETURN;
  END IF;

  -- The writes, one statement: a hold of nothing writes its hold and header only (as holds.ts does).
  WITH hold AS (
    INSERT INTO holds (id, user_id, app_id, key_id, amount, captured, refunded, status, description, created_at, expires_at, closed_at, period_day, period_month)
    VALUES (p_hold_id, p_user_id, p_app_id, p_key_id, p_amount, 0, 0, 'open', p_description, p_now, p_expires_at, NULL, p_day, p_month)
  ), header AS (
    INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
    VALUES (p_txn_id, 'hold', p_user_id, p_hold_id, p_description, w.balance, w.reserved + p_amount, p_now)
  ), entries AS (
    INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
    SELECT p_txn_id, e.account, e.amount, p_now
      FROM (VALUES ('user:' || p_user_id || ':available', -p_amount), ('user:' || p_user_id || ':held', p_amount)) AS e(account, amount)
     WHERE p_amount <> 0
  ), wallet AS (
    UPDATE wallets SET reserved = reserved + p_amount, updated_at = p_now WHERE user_id = p_user_id AND p_amount <> 0
  )
  INSERT INTO spend_counters (subject, period, period_start, spent, held)
  SELECT s, p.period, p.start, 0, p_amount
    FROM unnest(subjects) AS s
   CROSS JOIN (VALUES ('daily', p_day), ('monthly', p_month), ('total', 0::bigint)) AS p(period, start)
   WHERE p_amount <> 0
  ON CONFLICT (subject, period, period_start)
  DO UPDATE SET spent = spend_counters.spent + excluded.spent, held = spend_counters.held + excluded.held;
END
$$`;

/** Version 2 of {@link CLOSE}. */
const CLOSE_V2 = `
CREATE OR REPLACE FUNCTION tollgate_close_hold(
  p_hold_id text, p_user_id text, p_status text, p_capture bigint, p_now bigint, p_txn_id text, p_description text,
  p_usage jsonb, p_billed bigint,
  OUT closed boolean, OUT captured bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  w record;
  h record;
BEGIN
  closed := false;
  captured := 0;
  SELECT balance, reserved INTO w FROM wallets WHERE user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  UPDATE holds SET status = p_status, captured = LEAST(amount, p_capture), closed_at = p_now
   WHERE id = p_hold_id AND user_id = p_user_id AND status = 'open'
  RETURNING amount, captured, app_id, key_id, period_day, period_month INTO h;
  IF NOT FOUND THEN RETURN; END IF;

  -- The writes, one statement: a hold of nothing writes its header (and the usage record) only.
  WITH header AS (
    INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
    VALUES (p_txn_id, CASE WHEN h.captured > 0 THEN 'capture' ELSE 'release' END, p_user_id, p_hold_id,
            CASE WHEN h.captured > 0 THEN p_description ELSE 'Hold released' END, w.balance - h.captured, w.reserved - h.amount, p_now)
  ), entries AS (
    INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
    SELECT p_txn_id, e.account, e.amount, p_now
      FROM (VALUES ('user:' || p_user_id || ':held', -h.amount), ('system:revenue', h.captured), ('user:' || p_user_id || ':available', h.amount - h.captured)) AS e(account, amount)
     WHERE e.amount <> 0
  ), wallet AS (
    UPDATE wallets SET balance = balance - h.captured, reserved = reserved - h.amount, updated_at = p_now
     WHERE user_id = p_user_id AND h.amount <> 0
  ), counters AS (
    INSERT INTO spend_counters (subject, period, period_start, spent, held)
    SELECT s, p.period, p.start, h.captured, -h.amount
      FROM unnest(tollgate_subjects(p_user_id, h.app_id, h.key_id)) AS s
     CROSS JOIN (VALUES ('daily', h.period_day), ('monthly', h.period_month), ('total', 0::bigint)) AS p(period, start)
     WHERE h.amount <> 0
    ON CONFLICT (subject, period, period_start)
    DO UPDATE SET spent = spend_counters.spent + excluded.spent, held = spend_counters.held + excluded.held
  )
  INSERT INTO usage_records (id, user_id, app_id, key_id, model, kind, prompt_tokens, completion_tokens, cost, latency_ms, status, hold_id, created_at, settlement, uncollected, details)
  SELECT r.id, r.user_id, r.app_id, r.key_id, r.model, r.kind, r.prompt_tokens, r.completion_tokens, h.captured, r.latency_ms, r.status, r.hold_id, r.created_at,
         NULL, GREATEST(0, p_billed - h.captured), r.details
    FROM jsonb_populate_record(NULL::usage_records, p_usage) AS r
   WHERE p_usage IS NOT NULL;
  closed := true;
  captured := h.captured;
END
$$`;

/**
 * The batch placement's rows placed one at a time through the single function, in user order (the wallet
 * locks' order): version 2's whole body, and version 3's path when some row is refused. One text for both,
 * so the two cannot drift apart; version 2's function is byte for byte what migration 1690 created.
 */
const PLACE_ONE_BY_ONE = `  FOR t IN SELECT * FROM unnest(p_hold_ids, p_txn_ids, p_user_ids, p_app_ids, p_key_ids, p_amounts, p_descriptions, p_nows, p_expires_ats, p_days, p_months)
           WITH ORDINALITY AS u(hold_id, txn_id, user_id, app_id, key_id, amount, description, at_now, expires_at, day_start, month_start, k)
           ORDER BY u.user_id, u.k LOOP
    r := tollgate_place_hold(t.hold_id, t.txn_id, t.user_id, t.app_id, t.key_id, t.amount, t.description, t.at_now, t.expires_at, t.day_start, t.month_start);
    n := t.k; refusal := r.refusal; limit_subject := r.limit_subject; limit_period := r.limit_period; limit_amount := r.limit_amount;
    limit_current := r.limit_current; wallet_available := r.wallet_available; wallet_debt := r.wallet_debt;
    RETURN NEXT;
  END LOOP;`;

/** Version 2 of {@link PLACE_MANY}: each row placed by an expression, not a statement. */
const PLACE_MANY_V2 = `
CREATE OR REPLACE FUNCTION tollgate_place_holds(
  p_hold_ids text[], p_txn_ids text[], p_user_ids text[], p_app_ids text[], p_key_ids text[], p_amounts bigint[], p_descriptions text[],
  p_nows bigint[], p_expires_ats bigint[], p_days bigint[], p_months bigint[])
RETURNS TABLE (n bigint, refusal text, limit_subject text, limit_period text, limit_amount bigint, limit_current bigint, wallet_available bigint,
               wallet_debt bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t record;
  r record;
BEGIN
${PLACE_ONE_BY_ONE}
END
$$`;

/** Version 2 of {@link CLOSE_MANY}, as {@link PLACE_MANY_V2}. */
const CLOSE_MANY_V2 = `
CREATE OR REPLACE FUNCTION tollgate_close_holds(
  p_hold_ids text[], p_user_ids text[], p_statuses text[], p_captures bigint[], p_nows bigint[], p_txn_ids text[], p_descriptions text[],
  p_usages jsonb[], p_billeds bigint[])
RETURNS TABLE (n bigint, closed boolean, captured bigint)
LANGUAGE plpgsql AS $$
DECLARE
  t record;
  r record;
BEGIN
  FOR t IN SELECT * FROM unnest(p_hold_ids, p_user_ids, p_statuses, p_captures, p_nows, p_txn_ids, p_descriptions, p_usages, p_billeds)
           WITH ORDINALITY AS u(hold_id, user_id, status, capture, at_now, txn_id, description, usage, billed, k)
           ORDER BY u.user_id, u.k LOOP
    r := tollgate_close_hold(t.hold_id, t.user_id, t.status, t.capture, t.at_now, t.txn_id, t.description, t.usage, t.billed);
    n := t.k; closed := r.closed; captured := r.captured;
    RETURN NEXT;
  END LOOP;
END
$$`;

/*
 * Version 3 of the batch functions (migration 1700): a batch in a few statements, whatever its size,
 * instead of three per call. A profile of the backends under the concurrency-64 load (`perf`, docs/scaling.md)
 * put most of the server's CPU per call in what each statement costs again — executor start-up and
 * shut-down, plan-cache checks, the CHECK constraints of `holds` and `wallets` read and planned per
 * statement — rather than in the rows. So a batch locks its wallets (in the order of their user, as before)
 * and writes all its rows in one statement of data-modifying CTEs: the same rows as the single functions
 * one by one, each ledger header's `balance_after` / `reserved_after` the running sums of its user's rows in
 * the batch's order, one update per wallet and per counter (their sums), the headers inserted in that order
 * (their `seq`).
 *
 * The wallet CHECK constraints see only each wallet's final row. No step in between could have broken
 * them: a placement is written only when every step passes the wallet check, and a close can only raise
 * `balance - reserved` (it releases at least what it captures) and lower `reserved`.
 */

/**
 * Version 3 of {@link PLACE_MANY}. Placing is a decision per row, each after the ones before it; when every
 * row passes its checks with the earlier rows counted (the usual case), every row is placed, all in one
 * statement. Otherwise nothing is written by that statement and the rows go one by one through
 * `tollgate_place_hold`, as in {@link PLACE_MANY_V2}, which also creates missing wallets in user order.
 */
const PLACE_MANY_V3 = `
CREATE OR REPLACE FUNCTION tollgate_place_holds(
  p_hold_ids text[], p_txn_ids text[], p_user_ids text[], p_app_ids text[], p_key_ids text[], p_amounts bigint[], p_descriptions text[],
  p_nows bigint[], p_expires_ats bigint[], p_days bigint[], p_months bigint[])
RETURNS TABLE (n bigint, refusal text, limit_subject text, limit_period text, limit_amount bigint, limit_current bigint, wallet_available bigint,
               wallet_debt bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  t record;
  r record;
  all_placed boolean := false;
BEGIN
  -- Every user has a wallet (else the rows one by one create them, in order): lock them all, in user order.
  IF (SELECT count(*) FROM wallets WHERE user_id = ANY (p_user_ids)) = (SELECT count(DISTINCT u) FROM unnest(p_user_ids) AS u) THEN
    PERFORM FROM wallets WHERE user_id = ANY (p_user_ids) ORDER BY user_id FOR UPDATE;
    WITH input AS (
      SELECT u.*, CASE WHEN u.app_id IS NOT NULL THEN 'app:' || u.user_id || ':' || u.app_id END AS app_subject,
             CASE WHEN u.key_id IS NOT NULL THEN 'key:' || u.key_id END AS key_subject
        FROM unnest(p_hold_ids, p_txn_ids, p_user_ids, p_app_ids, p_key_ids, p_amounts, p_descriptions, p_nows, p_expires_ats, p_days, p_months)
             WITH ORDINALITY AS u(hold_id, txn_id, user_id, app_id, key_id, amount, description, at_now, expires_at, day_start, month_start, k)
    ), staged AS (
      -- Each row as if every earlier row of its user were placed: the wallet's reserved credits after it.
      SELECT i.*, w.balance, w.reserved, w.debt, sum(i.amount) OVER (PARTITION BY i.user_id ORDER BY i.k) AS reserved_so_far
        FROM input i JOIN wallets w ON w.user_id = i.user_id
    ), counted AS (
      -- Each counter a row adds to, with what the rows up to it (in the batch's order) add to it.
      SELECT p.k, p.amount, c.subject, c.period, c.start,
             sum(p.amount) OVER (PARTITION BY c.subject, c.period, c.start ORDER BY p.user_id, p.k) AS counted_so_far
        FROM staged p,
             LATERAL (VALUES (p.app_subject, 'daily', p.day_start), (p.app_subject, 'monthly', p.month_start), (p.app_subject, 'total', 0::bigint),
                             (p.key_subject, 'daily', p.day_start), (p.key_subject, 'monthly', p.month_start), (p.key_subject, 'total', 0::bigint)) AS c(subject, period, start)
       WHERE c.subject IS NOT NULL
    ), refused AS (
      -- A row that would not be placed after the earlier ones: a wallet missing, short or owing, an overdue
      -- hold (an earlier row's too), a limit exceeded. Any one sends the whole batch one by one below.
      SELECT FROM (SELECT count(*) AS staged_rows FROM staged) AS x WHERE x.staged_rows <> cardinality(p_hold_ids)
      UNION ALL
      SELECT FROM staged p WHERE p.debt > 0 OR p.balance - p.reserved - p.reserved_so_far < 0
      UNION ALL
      SELECT FROM staged p WHERE EXISTS (SELECT FROM holds h WHERE h.user_id = p.user_id AND h.status = 'open' AND h.expires_at <= p.at_now)
      UNION ALL
      SELECT FROM staged p JOIN staged e ON e.user_id = p.user_id AND e.k < p.k AND e.expires_at <= p.at_now
      UNION ALL
      SELECT FROM counted c JOIN spending_limits s ON s.subject = c.subject AND s.period = c.period
        LEFT JOIN spend_counters sc ON sc.subject = c.subject AND sc.period = c.period AND sc.period_start = c.start
       WHERE coalesce(sc.spent + sc.held, 0) + c.counted_so_far > s.amount
    ), go AS (
      SELECT NOT EXISTS (SELECT FROM refused) AS ok
    ), hold AS (
      INSERT INTO holds (id, user_id, app_id, key_id, amount, captured, refunded, status, description, created_at, expires_at, closed_at, period_day, period_month)
      SELECT p.hold_id, p.user_id, p.app_id, p.key_id, p.amount, 0, 0, 'open', p.description, p.at_now, p.expires_at, NULL, p.day_start, p.month_start
        FROM staged p, go WHERE go.ok
    ), header AS (
      INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
      SELECT p.txn_id, 'hold', p.user_id, p.hold_id, p.description, p.balance, p.reserved + p.reserved_so_far, p.at_now
        FROM staged p, go WHERE go.ok ORDER BY p.user_id, p.k
    ), entries AS (
      INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
      SELECT p.txn_id, e.account, e.amount, p.at_now
        FROM staged p, go, LATERAL (VALUES ('user:' || p.user_id || ':available', -p.amount), ('user:' || p.user_id || ':held', p.amount)) AS e(account, amount)
       WHERE go.ok AND p.amount <> 0
    ), wallet AS (
      UPDATE wallets SET reserved = wallets.reserved + t.amount, updated_at = t.at_now
        FROM (SELECT p.user_id, sum(p.amount) AS amount, (array_agg(p.at_now ORDER BY p.k DESC))[1] AS at_now
                FROM staged p, go WHERE go.ok AND p.amount <> 0 GROUP BY p.user_id) t
       WHERE wallets.user_id = t.user_id
    ), counters AS (
      INSERT INTO spend_counters (subject, period, period_start, spent, held)
      SELECT c.subject, c.period, c.start, 0, sum(c.amount)
        FROM counted c, go WHERE go.ok AND c.amount <> 0
       GROUP BY c.subject, c.period, c.start
      ON CONFLICT (subject, period, period_start)
      DO UPDATE SET spent = spend_counters.spent + excluded.spent, held = spend_counters.held + excluded.held
    )
    SELECT go.ok INTO all_placed FROM go;
  END IF;
  IF all_placed THEN
    -- Every row placed: no refusal to report.
    RETURN QUERY SELECT u.k, NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint
      FROM unnest(p_hold_ids) WITH ORDINALITY AS u(hold_id, k);
    RETURN;
  END IF;

  -- Some row is refused (or a wallet is to be created): one by one, nothing written above.
${PLACE_ONE_BY_ONE}
END
$$`;

/*
 * A close decides nothing beyond whether its hold is open: the batch's closes are one statement. A close
 * whose wallet or open hold is not there writes nothing and answers `closed` false, as before.
 */

/** Version 3 of {@link CLOSE_MANY}: the closes of a batch as one statement. */
const CLOSE_MANY_V3 = `
CREATE OR REPLACE FUNCTION tollgate_close_holds(
  p_hold_ids text[], p_user_ids text[], p_statuses text[], p_captures bigint[], p_nows bigint[], p_txn_ids text[], p_descriptions text[],
  p_usages jsonb[], p_billeds bigint[])
RETURNS TABLE (n bigint, closed boolean, captured bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  -- The wallet locks first, in the order of their user (the deadlock-freedom invariant above).
  PERFORM FROM wallets WHERE user_id = ANY (p_user_ids) ORDER BY user_id FOR UPDATE;
  RETURN QUERY
  WITH input AS (
    SELECT * FROM unnest(p_hold_ids, p_user_ids, p_statuses, p_captures, p_nows, p_txn_ids, p_descriptions, p_usages, p_billeds)
           WITH ORDINALITY AS u(hold_id, user_id, status, capture, at_now, txn_id, description, usage, billed, k)
  ), claim AS (
    -- A hold named twice is closed by its first row (in the batch's order), as closing them one by one would.
    SELECT DISTINCT ON (i.hold_id, i.user_id) i.* FROM input i ORDER BY i.hold_id, i.user_id, i.k
  ), closing AS (
    UPDATE holds SET status = c.status, captured = LEAST(holds.amount, c.capture), closed_at = c.at_now
      FROM claim c JOIN wallets w ON w.user_id = c.user_id
     WHERE holds.id = c.hold_id AND holds.user_id = c.user_id AND holds.status = 'open'
    RETURNING c.k, c.user_id, c.hold_id, c.txn_id, c.description, c.at_now, c.usage, c.billed, holds.amount, holds.captured,
              holds.period_day, holds.period_month, w.balance, w.reserved,
              CASE WHEN holds.app_id IS NOT NULL THEN 'app:' || holds.user_id || ':' || holds.app_id END AS app_subject,
              CASE WHEN holds.key_id IS NOT NULL THEN 'key:' || holds.key_id END AS key_subject
  ), h AS (
    -- Each header carries the wallet after its own close: the running sums of the user's closes, in order.
    SELECT closing.*,
           sum(closing.captured) OVER (PARTITION BY closing.user_id ORDER BY closing.k) AS captured_so_far,
           sum(closing.amount) OVER (PARTITION BY closing.user_id ORDER BY closing.k) AS amount_so_far
      FROM closing
  ), header AS (
    INSERT INTO ledger_transactions (id, type, user_id, hold_id, description, balance_after, reserved_after, created_at)
    SELECT h.txn_id, CASE WHEN h.captured > 0 THEN 'capture' ELSE 'release' END, h.user_id, h.hold_id,
           CASE WHEN h.captured > 0 THEN h.description ELSE 'Hold released' END, h.balance - h.captured_so_far, h.reserved - h.amount_so_far, h.at_now
      FROM h ORDER BY h.user_id, h.k
  ), entries AS (
    INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
    SELECT h.txn_id, e.account, e.amount, h.at_now
      FROM h, LATERAL (VALUES ('user:' || h.user_id || ':held', -h.amount), ('system:revenue', h.captured), ('user:' || h.user_id || ':available', h.amount - h.captured)) AS e(account, amount)
     WHERE e.amount <> 0
  ), wallet AS (
    -- One update per wallet (a row updated twice in one statement keeps only one update), updated_at the last close's.
    UPDATE wallets SET balance = wallets.balance - t.captured, reserved = wallets.reserved - t.amount, updated_at = t.at_now
      FROM (SELECT h.user_id, sum(h.captured) AS captured, sum(h.amount) AS amount, (array_agg(h.at_now ORDER BY h.k DESC))[1] AS at_now
              FROM h WHERE h.amount <> 0 GROUP BY h.user_id) t
     WHERE wallets.user_id = t.user_id
  ), counters AS (
    -- Summed per counter: ON CONFLICT cannot update a row twice in one statement.
    INSERT INTO spend_counters (subject, period, period_start, spent, held)
    SELECT c.subject, c.period, c.start, sum(h.captured), -sum(h.amount)
      FROM h, LATERAL (VALUES (h.app_subject, 'daily', h.period_day), (h.app_subject, 'monthly', h.period_month), (h.app_subject, 'total', 0::bigint),
                              (h.key_subject, 'daily', h.period_day), (h.key_subject, 'monthly', h.period_month), (h.key_subject, 'total', 0::bigint)) AS c(subject, period, start)
     WHERE c.subject IS NOT NULL AND h.amount <> 0
     GROUP BY c.subject, c.period, c.start
    ON CONFLICT (subject, period, period_start)
    DO UPDATE SET spent = spend_counters.spent + excluded.spent, held = spend_counters.held + excluded.held
  ), usage AS (
    INSERT INTO usage_records (id, user_id, app_id, key_id, model, kind, prompt_tokens, completion_tokens, cost, latency_ms, status, hold_id, created_at, settlement, uncollected, details)
    SELECT r.id, r.user_id, r.app_id, r.key_id, r.model, r.kind, r.prompt_tokens, r.completion_tokens, h.captured, r.latency_ms, r.status, r.hold_id, r.created_at,
           NULL, GREATEST(0, h.billed - h.captured), r.details
      FROM h, jsonb_populate_record(NULL::usage_records, h.usage) AS r
     WHERE h.usage IS NOT NULL
  )
  SELECT i.k, h.k IS NOT NULL, coalesce(h.captured, 0) FROM input i LEFT JOIN h ON h.k = i.k;
END
$$`;

/*
 * Version 3 of placement (migration 1880): weekly spending limits (periods.ts; Monday 00:00 UTC). A week has no
 * spend counter of its own — every call would write one more row — so a weekly limit's spend is the sum of its
 * subject's daily counters from the hold's Monday through its day, summed only where a subject has a weekly
 * limit: a hold whose subjects have none reads and writes exactly the rows it did. A subject's limits are checked
 * by period length, as periods.ts LIMIT_PERIODS orders them: daily, weekly, monthly, total (the app's, then the
 * key's; decisions.md's order with the week in its place). Everything else is version 2's (3's for the batch)
 * text, which these are made from: the two cannot drift apart.
 */

/** `text` with `old`, which must occur in it exactly once, replaced by `by` (a function made from an older one). */
function replacedOnce(text: string, old: string, by: string): string {
  if (text.split(old).length !== 2) throw new Error(`pg-functions: expected one occurrence of ${old.slice(0, 80)}`);
  return text.replace(old, () => by);
}

/**
 * The Monday 00:00 UTC (epoch ms) of the week of the day that starts at `day` (epoch ms): periods.ts `weekStart`
 * in integer arithmetic. Day 0 of the epoch, 1 January 1970, was a Thursday, three days after a Monday.
 */
const WEEK_START = (day: string) => `(${day} - ((${day} / 86400000 + 3) % 7) * 86400000)`;

/** The spend of a subject's week: its daily counters from the week's Monday through the day that starts at `day`. */
const WEEK_SPEND = (subject: string, day: string) =>
  `(SELECT coalesce(sum(d.spent + d.held), 0)::bigint FROM spend_counters d
                WHERE d.subject = ${subject} AND d.period = 'daily' AND d.period_start BETWEEN ${WEEK_START(day)} AND ${day})`;

/** Version 3 of {@link PLACE}: {@link PLACE_V2} with weekly limits in its limit check. */
const PLACE_V3 = replacedOnce(
  PLACE_V2,
  `  -- Spending limits: app daily, monthly, total, then the key's; spent + held + amount <= limit. The first one
  -- exceeded, in that order, with its counter of the hold's period (none yet: 0).
  IF cardinality(subjects) > 0 THEN
    SELECT s.subject, s.period, s.amount, coalesce(c.spent + c.held, 0) AS current_spend INTO l
      FROM spending_limits s
      LEFT JOIN spend_counters c ON c.subject = s.subject AND c.period = s.period
       AND c.period_start = CASE s.period WHEN 'daily' THEN p_day WHEN 'monthly' THEN p_month ELSE 0 END
     WHERE s.subject = ANY (subjects) AND coalesce(c.spent + c.held, 0) + p_amount > s.amount
     ORDER BY array_position(subjects, s.subject), array_position(ARRAY['daily', 'monthly', 'total'], s.period)
     LIMIT 1;`,
  `  -- Spending limits: app daily, weekly, monthly, total, then the key's; spent + held + amount <= limit. The first
  -- one exceeded, in that order, with its counter of the hold's period (none yet: 0); a weekly limit (no counter
  -- of its own, the join finds none) with the sum of its days' counters, read for that limit's row only.
  IF cardinality(subjects) > 0 THEN
    SELECT s.subject, s.period, s.amount, x.current_spend INTO l
      FROM spending_limits s
      LEFT JOIN spend_counters c ON c.subject = s.subject AND c.period = s.period
       AND c.period_start = CASE s.period WHEN 'daily' THEN p_day WHEN 'monthly' THEN p_month ELSE 0 END
     CROSS JOIN LATERAL (
       SELECT CASE WHEN s.period = 'weekly' THEN ${WEEK_SPEND('s.subject', 'p_day')}
              ELSE coalesce(c.spent + c.held, 0) END AS current_spend) x
     WHERE s.subject = ANY (subjects) AND x.current_spend + p_amount > s.amount
     ORDER BY array_position(subjects, s.subject), array_position(ARRAY['daily', 'weekly', 'monthly', 'total'], s.period)
     LIMIT 1;`,
);

/**
 * Version 4 of {@link PLACE_MANY}: {@link PLACE_MANY_V3} with weekly limits among the checks that send a batch
 * one by one. A row's week counts what the subject's daily counters hold from Monday through the row's day, and
 * what the batch's rows up to it add in that week (a batch across midnight may count a later day's row early:
 * then it goes one by one, where `tollgate_place_hold` decides exactly).
 */
const PLACE_MANY_V4 = replacedOnce(
  PLACE_MANY_V3,
  `       WHERE coalesce(sc.spent + sc.held, 0) + c.counted_so_far > s.amount
    ), go AS (`,
  `       WHERE coalesce(sc.spent + sc.held, 0) + c.counted_so_far > s.amount
      UNION ALL
      SELECT FROM (
        SELECT c.subject, c.start, s.amount AS weekly_limit,
               sum(c.amount) OVER (PARTITION BY c.subject, ${WEEK_START('c.start')} ORDER BY c.k) AS counted_so_far
          FROM counted c JOIN spending_limits s ON s.subject = c.subject AND s.period = 'weekly'
         WHERE c.period = 'daily') wk
       WHERE ${WEEK_SPEND('wk.subject', 'wk.start')} + wk.counted_so_far > wk.weekly_limit
    ), go AS (`,
);

/** Migrations of the PostgreSQL billing functions (nothing on SQLite, whose path has no round trips). */
export const billingFunctionMigrations: Record<string, Migration> = {
  '1680_billing_pg_functions': {
    async up(db: Kysely<any>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      for (const text of [SUBJECTS, COUNT, PLACE, CLOSE, PLACE_MANY, CLOSE_MANY]) await sql.raw(text).execute(db);
    },
  },
  '1690_billing_pg_functions_fewer_statements': {
    async up(db: Kysely<any>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      for (const text of [PLACE_V2, CLOSE_V2, PLACE_MANY_V2, CLOSE_MANY_V2]) await sql.raw(text).execute(db);
    },
  },
  '1700_billing_pg_functions_set_based_batches': {
    async up(db: Kysely<any>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      for (const text of [PLACE_MANY_V3, CLOSE_MANY_V3]) await sql.raw(text).execute(db);
    },
  },
  '1880_billing_pg_functions_weekly_limits': {
    async up(db: Kysely<any>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      for (const text of [PLACE_V3, PLACE_MANY_V4]) await sql.raw(text).execute(db);
    },
  },
};
