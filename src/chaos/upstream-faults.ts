import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import type { ChaosProfile } from './profile.ts';
import type { FaultUpstream } from './fault-upstream.ts';
import { wordsOf } from './fault-upstream.ts';
import {
  assertCreditsConserved,
  assertLedgerVerifies,
  chat,
  createChaosUser,
  CREDIT,
  putChatModel,
  type ChatOutcome,
} from './client.ts';
import { count } from './figures.ts';

/** How a faulty call must end for its client, and what it may cost (in tokens, 1 credit each). */
type Expectation =
  | { outcome: 'error-before-output'; status: 502 | 504; charge: 0 }
  | { outcome: 'error-after-output'; charge: number }
  | { outcome: 'ok'; charge: number };

interface FaultCase {
  upstreamModel: string;
  stream: boolean;
  expect: Expectation;
}

const before502 = { outcome: 'error-before-output', status: 502, charge: 0 } as const;

/** The fault matrix: every fault, streamed and not, with what the client and the ledger must see. */
const FAULTS: FaultCase[] = [
  ...[false, true].flatMap((stream) => [
    { upstreamModel: 'status-500', stream, expect: before502 },
    { upstreamModel: 'status-503', stream, expect: before502 },
    { upstreamModel: 'html-502', stream, expect: before502 },
    { upstreamModel: 'hang', stream, expect: { outcome: 'error-before-output', status: 504, charge: 0 } as const },
    { upstreamModel: 'reset', stream, expect: before502 },
    { upstreamModel: 'empty', stream, expect: before502 },
    { upstreamModel: 'malformed', stream, expect: before502 },
    { upstreamModel: 'drip-4-40', stream, expect: { outcome: 'ok', charge: 4 } as const },
  ]),
  { upstreamModel: 'no-choices', stream: false, expect: before502 },
  { upstreamModel: 'cut-3', stream: false, expect: before502 },
  { upstreamModel: 'cut-3', stream: true, expect: { outcome: 'error-after-output', charge: 3 } },
  { upstreamModel: 'end-2', stream: true, expect: { outcome: 'error-after-output', charge: 2 } },
  { upstreamModel: 'error-frame-5', stream: true, expect: { outcome: 'error-after-output', charge: 5 } },
  { upstreamModel: 'malformed-after-3', stream: true, expect: { outcome: 'error-after-output', charge: 3 } },
];

/** The catalogue id of a fault case: one model per case, so each call's usage record says which case it was. */
const modelIdOf = (c: FaultCase) => `chaos/${c.stream ? 's' : 'n'}-${c.upstreamModel}`;

/** Asserts what the client of one faulty call saw. */
function assertClientSaw(c: FaultCase, seen: ChatOutcome): void {
  const what = `${modelIdOf(c)}: ${JSON.stringify(seen).slice(0, 400)}`;
  assert.equal(seen.cut, false, `the gateway itself broke the connection (${what})`);
  if (c.expect.outcome === 'error-before-output') {
    assert.equal(seen.status, c.expect.status, what);
    assert.equal(seen.body?.error?.code, 'UPSTREAM_ERROR', what);
    assert.equal(seen.body?.error?.type, 'upstream_error', what);
    assert.equal(typeof seen.body?.error?.message, 'string', what);
    return;
  }
  assert.equal(seen.status, 200, what);
  if (c.expect.outcome === 'error-after-output') {
    const last = seen.frames!.at(-1)!;
    assert.equal(last.event, 'error', what);
    assert.equal(last.data?.error?.code, 'UPSTREAM_ERROR', what);
    assert.equal(last.data?.error?.type, 'upstream_error', what);
    assert.equal(seen.content, wordsOf(c.expect.charge).join(''), what);
    return;
  }
  assert.equal(seen.content, wordsOf(c.expect.charge).join(''), what);
  if (c.stream) assert.equal(seen.frames!.at(-1)!.data, '[DONE]', what);
}

/**
 * Upstream faults (timeouts, 5xx, HTML error pages, resets, empty and malformed bodies, streams cut or
 * broken mid-way, slow drips), each streamed and not, `faultRounds` times at once: every client gets a
 * clear error (a 502/504 envelope with UPSTREAM_ERROR before output, an SSE `event: error` frame after),
 * and every hold is closed for exactly what was produced — 0 when nothing was.
 */
export function upstreamFaultSuite(profile: ChaosProfile, upstream: FaultUpstream): void {
  describeEachDatabase(
    'upstream faults: clear errors, holds settled for what was produced',
    (env) => {
      before(async () => {
        for (const c of FAULTS) await putChatModel(env.baseUrl, env.adminToken, modelIdOf(c), c.upstreamModel);
      });

      it(`${FAULTS.length} faults × ${profile.faultRounds} rounds, sent at once`, async () => {
        const granted = 100_000;
        const user = await createChaosUser(env.baseUrl, env.adminToken, { credits: granted });
        const calls = Array.from({ length: profile.faultRounds }, () => FAULTS).flat();
        const outcomes = await Promise.all(
          calls.map((c) =>
            chat(env.baseUrl, user.key, {
              model: modelIdOf(c),
              stream: c.stream,
              messages: [{ role: 'user', content: 'hi' }],
            }),
          ),
        );
        count('faultsInjected', calls.filter((c) => c.expect.outcome !== 'ok').length);
        calls.forEach((c, i) => assertClientSaw(c, outcomes[i]));

        // Each call's hold, through its usage record: closed, and captured exactly what the call produced.
        const records = await env.db
          .selectFrom('usage_records')
          .innerJoin('holds', 'holds.id', 'usage_records.hold_id')
          .select(['usage_records.model', 'usage_records.cost', 'holds.status', 'holds.captured', 'holds.amount'])
          .where('usage_records.user_id', '=', user.userId)
          .execute();
        assert.equal(records.length, calls.length, 'every call has its usage record and its hold');
        const byModel = new Map(FAULTS.map((c) => [modelIdOf(c), c]));
        for (const record of records) {
          const c = byModel.get(record.model)!;
          assert.ok(['settled', 'released'].includes(record.status), `${record.model}: hold ${record.status}`);
          assert.equal(
            Number(record.captured),
            c.expect.charge * CREDIT,
            `${record.model}: captured ${record.captured}`,
          );
          assert.ok(Number(record.captured) <= Number(record.amount));
        }
        const expectedCharge = calls.reduce((sum, c) => sum + c.expect.charge, 0) * CREDIT;
        const { captured } = await assertCreditsConserved(env.db, new Map([[user.userId, granted * CREDIT]]));
        assert.equal(captured, expectedCharge);
        await assertLedgerVerifies(env.baseUrl, env.adminToken);
      });
    },
    { config: { OPENAI_BASE_URL: upstream.baseUrl, UPSTREAM_TIMEOUT_MS: 1000 } },
  );
}
