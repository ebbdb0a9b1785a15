import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import type { Principal } from '../platform/http/principal.ts';
import { microsToCredits } from '../platform/money.ts';
import { fundedUser, putModel, settled, usageOf, wallet } from '../gateway/testing.ts';
import { Meter } from './meter.ts';
import { insertUser } from './testing/fixtures.ts';
import { startGatedUpstream } from './testing/gated-upstream.ts';
import { allTables } from '../testing/all-tables.ts';

const upstream = await startGatedUpstream(11);
after(() => upstream.close());

/** The hold's lifetime in these suites: a 20-minute stream outlives it 120 times over. */
const HOLD_TTL_SECONDS = 10;
/** 1 micro-credit per prompt token, 1,000 per completion token. */
const PRICING = { prompt: 1, completion: 1000 };
const MAX_OUTPUT = 100;
const CHAT = { model: 'acme/long', messages: [{ role: 'user', content: 'think for a long time' }] };

/** The principal of a user's first-party call (no app, no key): what the meter bills. */
function principalOf(userId: string): Principal {
  return { kind: 'session', userId, appId: null, keyId: null, scopes: new Set() };
}

describeEachDatabase(
  'the meter keeps a long call alive (hole 1)',
  (env) => {
    const ctx = () => env.service.ctx;
    const sweep = () => ctx().billing.releaseExpiredHolds();

    before(async () => {
      await putModel(env, 'acme/long', {
        provider: 'gated',
        upstreamModel: 'gated',
        pricing: PRICING,
        maxOutputTokens: MAX_OUTPUT,
      });
    });

    it('hole 1: a 20-minute stream with HOLD_TTL_SECONDS=10 is charged what it produced, keeps its limit reserved while it runs, and the ledger verifies', async () => {
      // The hold a call of this body places (the worst case is another part's to compute): read from a probe.
      const probe = await fundedUser(env, 10);
      const started = env.request('POST', '/api/v1/chat/completions', {
        token: probe.key,
        body: { ...CHAT, stream: true },
      });
      await upstream.opened();
      upstream.finish();
      assert.equal((await started).status, 200);
      await settled(env, probe);
      const [probeRecord] = await usageOf(env, probe);
      const held = Number(
        (
          await allTables(ctx().db)
            .selectFrom('holds')
            .select('amount')
            .where('id', '=', probeRecord!.hold_id!)
            .executeTakeFirstOrThrow()
        ).amount,
      );

      // A key whose total limit covers one such call and not two.
      const user = await fundedUser(env, 10);
      const limitCredits = microsToCredits(Math.floor(held * 1.5));
      const limited = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
        name: 'limited',
        permissions: ['ai:chat'],
        limit: limitCredits,
        limitPeriod: 'total',
      });
      assert.equal(limited.status, 200, limited.text);
      const key = limited.body.apiKey.key as string;

      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...CHAT, stream: true }),
      });
      assert.equal(response.status, 200);
      const body = response.text();
      await upstream.opened();

      // Twenty minutes of the settable clock, five seconds at a time: a word every minute, the sweep after
      // every step, and every five minutes another call on the same key, which the limit must refuse.
      for (let second = 5; second <= 20 * 60; second += 5) {
        await env.manualClock.advance(5000);
        assert.equal((await sweep()).expired, 0, `no hold expired at ${second} s`);
        if (second % 60 === 0) upstream.emit();
        if (second % 300 === 0) {
          const other = await env.request('POST', '/api/v1/chat/completions', { token: key, body: CHAT });
          assert.equal(
            other.status,
            429,
            `at ${second} s the running stream still reserves its part of the limit: ${other.text}`,
          );
          assert.equal(other.body.error.code, 'SPENDING_LIMIT_EXCEEDED');
          assert.equal((await wallet(env, user)).reserved, held, 'the stream still holds its worst case');
        }
      }
      const words = upstream.finish();
      assert.equal(words, 21);
      assert.match(await body, /data: \[DONE\]/);

      const after = await settled(env, user);
      const cost = 11 * PRICING.prompt + words * PRICING.completion;
      assert.equal(after.balance, 10_000_000 - cost, 'charged what the stream produced');
      const [record] = await usageOf(env, user);
      assert.equal(Number(record!.cost), cost);
      assert.equal(Number(record!.completion_tokens), words);
      assert.equal(record!.settlement, null, 'settled on its own hold, which never expired');
      assert.equal(Number(record!.uncollected), 0);
      const report = await ctx().billing.verify();
      assert.deepEqual({ ok: report.ok, differences: report.differences }, { ok: true, differences: [] });
    });

    it('a call whose hold expired anyway (a stalled process) is charged its cost from the available credits, and its usage record says charged_after_expiry', async () => {
      const userId = await insertUser(ctx());
      await ctx().billing.grant(userId, 1_000_000, 'test');
      // A stall: this meter's clock moves but its heartbeat never runs (a plain clock has no timers of its own,
      // so it would beat on the wall clock, seconds from now).
      const stalled = { ...ctx(), clock: { now: () => env.manualClock.now() } };
      const meter = await Meter.open(stalled, principalOf(userId), 'chat', 'acme/long', 300_000);
      await env.manualClock.advance((HOLD_TTL_SECONDS + 1) * 1000);
      assert.equal((await sweep()).expired, 1, 'the sweep expired the stalled hold and freed its credits');

      const captured = await meter.settle({
        model: { id: 'acme/long' },
        cost: 120_000,
        promptTokens: 11,
        completionTokens: 120,
        status: 'ok',
      });
      assert.equal(captured, 120_000);
      assert.deepEqual(await ctx().billing.getBalance(userId), {
        balance: 880_000,
        reserved: 0,
        available: 880_000,
      });
      const record = await allTables(ctx().db)
        .selectFrom('usage_records')
        .selectAll()
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [Number(record.cost), record.settlement, Number(record.uncollected)],
        [120_000, 'charged_after_expiry', 0],
      );
      const hold = await allTables(ctx().db)
        .selectFrom('holds')
        .select(['status', 'captured'])
        .where('id', '=', meter.holdId!)
        .executeTakeFirstOrThrow();
      assert.deepEqual([hold.status, Number(hold.captured)], ['settled', 120_000]);
      assert.equal((await ctx().billing.verify({ userId })).ok, true);
      assert.equal(
        await meter.settle({
          model: { id: 'acme/long' },
          cost: 120_000,
          promptTokens: 11,
          completionTokens: 120,
          status: 'ok',
        }),
        0,
        'a meter closes once',
      );
    });

    it('a charge after expiry takes the available credits down to zero, never below, and records what it could not collect', async () => {
      const userId = await insertUser(ctx());
      const billing = ctx().billing;
      await billing.grant(userId, 500_000, 'test');
      const stalled = { ...ctx(), clock: { now: () => env.manualClock.now() } };
      const meter = await Meter.open(stalled, principalOf(userId), 'chat', 'acme/long', 400_000);
      await env.manualClock.advance((HOLD_TTL_SECONDS + 1) * 1000);
      await sweep();
      // Meanwhile the freed credits were spent by another call: 100,000 are left.
      const other = await billing.placeHold({ userId, appId: null, keyId: null, amount: 400_000 });
      await billing.settleHold(other.holdId, 400_000, { userId });

      assert.equal(
        await meter.settle({
          model: { id: 'acme/long' },
          cost: 250_000,
          promptTokens: 1,
          completionTokens: 250,
          status: 'ok',
        }),
        100_000,
      );
      assert.deepEqual(await billing.getBalance(userId), { balance: 0, reserved: 0, available: 0 });
      const record = await allTables(ctx().db)
        .selectFrom('usage_records')
        .selectAll()
        .where('hold_id', '=', meter.holdId!)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [Number(record.cost), record.settlement, Number(record.uncollected)],
        [100_000, 'charged_after_expiry', 150_000],
      );
      assert.equal((await billing.verify({ userId })).ok, true);
    });

    it('the heartbeat stops when the meter closes, and a released call leaves nothing held', async () => {
      const userId = await insertUser(ctx());
      await ctx().billing.grant(userId, 1_000_000, 'test');
      const meter = await Meter.open(ctx(), principalOf(userId), 'chat', 'acme/long', 200_000);
      await env.manualClock.advance(5000);
      const extended = await allTables(ctx().db)
        .selectFrom('holds')
        .select('expires_at')
        .where('id', '=', meter.holdId!)
        .executeTakeFirstOrThrow();
      assert.equal(
        Number(extended.expires_at),
        env.manualClock.now() + HOLD_TTL_SECONDS * 1000,
        'a beat moved the expiry a full TTL ahead',
      );
      await meter.release({ id: 'acme/long' }, 'upstream_error');
      await env.manualClock.advance((HOLD_TTL_SECONDS + 1) * 1000);
      const hold = await allTables(ctx().db)
        .selectFrom('holds')
        .select(['status', 'expires_at'])
        .where('id', '=', meter.holdId!)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [hold.status, Number(hold.expires_at)],
        ['released', Number(extended.expires_at)],
        'no beat after the close',
      );
      assert.deepEqual(await ctx().billing.getBalance(userId), {
        balance: 1_000_000,
        reserved: 0,
        available: 1_000_000,
      });
    });
  },
  {
    manualClock: '2026-03-10T09:00:00Z',
    config: { HOLD_TTL_SECONDS, providers: [{ name: 'gated', baseUrl: upstream.baseUrl, apiKey: 'sk-gated' }] },
  },
);
