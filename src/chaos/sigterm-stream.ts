import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, startServeProcess } from '../testing/harness.ts';
import type { FaultUpstream } from './fault-upstream.ts';
import { wordsOf } from './fault-upstream.ts';
import { assertLedgerVerifies, chat, createChaosUser, CREDIT, putChatModel } from './client.ts';
import { count } from './figures.ts';
import type { SseFrame } from '../testing/sse.ts';

const GRACE_MS = 1500;
/** 3 words, 50 ms apart: ends well within the grace period. */
const SHORT = { id: 'chaos/short-drip', upstreamModel: 'drip-3-50', words: 3 };
/** 60 words, 100 ms apart: still streaming when the grace period ends. */
const LONG = { id: 'chaos/long-drip', upstreamModel: 'drip-60-100', words: 60 };

/**
 * A stream cut by a shutdown ends with the error frame of the contract's envelope, not a bare close: what it was
 * charged comes first when it asked for usage, then `event: error` with SERVICE_UNAVAILABLE, and no `[DONE]`.
 */
function assertEndsWithShutdownFrame(frames: SseFrame[]): void {
  const last = frames.at(-1)!;
  assert.equal(last.event, 'error', `the cut stream ends with an error frame, not ${JSON.stringify(last)}`);
  assert.equal(last.data.error.code, 'SERVICE_UNAVAILABLE');
  assert.match(last.data.error.message, /shutting down/);
  assert.ok(
    frames.at(-2)?.data?.usage?.cost > 0,
    'the frame before it carries what the stream was charged (stream_options.include_usage)',
  );
  assert.equal(
    frames.some((frame) => frame.data === '[DONE]'),
    false,
  );
}

/**
 * SIGTERM while streams flow (issue 7): a `tollgate serve` process with SHUTDOWN_GRACE_MS gets SIGTERM while
 * a short and a long slow-drip stream are open. The short one finishes whole; the long one is cut at the
 * deadline; the process exits 0; and both holds are settled for what was produced — the long one for the
 * words the gateway relayed, at least what the client received and at most what the upstream sent. A second
 * SIGTERM cuts at once whatever the grace period, with the same settlement.
 */
export function sigtermStreamSuite(upstream: FaultUpstream): void {
  describeEachDatabase(
    'SIGTERM during streams',
    (env) => {
      it('the short stream finishes, the long one is cut at the deadline, the process exits and both holds are settled', async () => {
        await putChatModel(env.baseUrl, env.adminToken, SHORT.id, SHORT.upstreamModel);
        await putChatModel(env.baseUrl, env.adminToken, LONG.id, LONG.upstreamModel);
        const user = await createChaosUser(env.baseUrl, env.adminToken, { credits: 1000 });
        const gateway = await startServeProcess(env, {
          OPENAI_BASE_URL: upstream.baseUrl,
          SHUTDOWN_GRACE_MS: String(GRACE_MS),
        });

        let longWords = 0;
        let shortWords = 0;
        let signalled: Promise<number | null> | null = null;
        const maybeSignal = () => {
          // Both streams are flowing: the long one has output, the short one has begun.
          if (!signalled && longWords >= 3 && shortWords >= 1) {
            count('faultsInjected');
            signalled = gateway.stop('SIGTERM');
          }
        };
        const words = (text: string) => (text ? text.split(' ').length : 0);
        const long = chat(
          gateway.baseUrl,
          user.key,
          {
            model: LONG.id,
            stream: true,
            stream_options: { include_usage: true },
            messages: [{ role: 'user', content: 'long' }],
          },
          (content) => {
            longWords = words(content);
            maybeSignal();
          },
        );
        const short = (async () => {
          // The short stream starts once the long one is flowing, so the signal lands during both.
          while (longWords < 2) await new Promise((resolve) => setTimeout(resolve, 5));
          return chat(
            gateway.baseUrl,
            user.key,
            { model: SHORT.id, stream: true, messages: [{ role: 'user', content: 'short' }] },
            (content) => {
              shortWords = words(content);
              maybeSignal();
            },
          );
        })();
        const [longSeen, shortSeen] = await Promise.all([long, short]);
        assert.ok(signalled, 'the signal was sent while both streams flowed');
        assert.equal(await signalled, 0, 'the process exits cleanly');

        assert.equal(shortSeen.status, 200);
        assert.equal(shortSeen.content, wordsOf(SHORT.words).join(''));
        assert.equal(shortSeen.frames!.at(-1)!.data, '[DONE]', 'the short stream finished');
        assert.equal(longSeen.status, 200);
        assertEndsWithShutdownFrame(longSeen.frames!);
        const received = words(longSeen.content);
        assert.ok(received >= 3 && received < LONG.words, `the long stream was cut mid-way (${received} words)`);

        // The process settled before it exited: nothing is left open, and each hold captured what was produced.
        const holds = await env.db
          .selectFrom('holds')
          .innerJoin('usage_records', 'usage_records.hold_id', 'holds.id')
          .select(['usage_records.model', 'usage_records.status as usage', 'holds.status', 'holds.captured'])
          .where('holds.user_id', '=', user.userId)
          .execute();
        assert.equal(holds.length, 2, 'both calls were recorded');
        const shortHold = holds.find((h) => h.model === SHORT.id)!;
        assert.deepEqual(
          [shortHold.status, shortHold.usage, Number(shortHold.captured)],
          ['settled', 'ok', SHORT.words * CREDIT],
        );
        const longHold = holds.find((h) => h.model === LONG.id)!;
        const sent = upstream.calls.findLast((call) => call.model === LONG.upstreamModel)!.wordsSent;
        assert.equal(longHold.status, 'settled');
        assert.equal(longHold.usage, 'client_aborted');
        const charged = Number(longHold.captured) / CREDIT;
        assert.ok(
          charged >= received && charged <= sent,
          `charged ${charged} words; the client received ${received}, the upstream sent ${sent}`,
        );
        count('holdsChecked', 2);
        await assertLedgerVerifies(env.baseUrl, env.adminToken);
      });

      // A grace period far longer than the stream: only the second signal can cut it.
      it('a second SIGTERM ends the grace period at once: the stream is cut, settled for what it produced, and the process exits', async () => {
        await putChatModel(env.baseUrl, env.adminToken, LONG.id, LONG.upstreamModel);
        const user = await createChaosUser(env.baseUrl, env.adminToken, { credits: 1000 });
        const gateway = await startServeProcess(env, {
          OPENAI_BASE_URL: upstream.baseUrl,
          SHUTDOWN_GRACE_MS: '600000',
        });
        let longWords = 0;
        let first: Promise<number | null> | null = null;
        let second = false;
        const seen = await chat(
          gateway.baseUrl,
          user.key,
          {
            model: LONG.id,
            stream: true,
            stream_options: { include_usage: true },
            messages: [{ role: 'user', content: 'long' }],
          },
          (content) => {
            longWords = content ? content.split(' ').length : 0;
            if (!first && longWords >= 3) {
              count('faultsInjected');
              first = gateway.stop('SIGTERM');
            } else if (first && !second && longWords >= 6 && gateway.output().includes('shutting down')) {
              second = true;
              gateway.child.kill('SIGTERM');
            }
          },
        );
        assert.ok(second, 'the second signal was sent while the stream flowed');
        assert.equal(await first, 0, 'the process exits cleanly');
        assert.equal(seen.status, 200);
        assertEndsWithShutdownFrame(seen.frames!);
        const received = seen.content.split(' ').length;
        assert.ok(received >= 6 && received < LONG.words, `the stream was cut mid-way (${received} words)`);
        assert.match(gateway.output(), /second signal: cutting in-flight calls now/);

        const [hold] = await env.db
          .selectFrom('holds')
          .innerJoin('usage_records', 'usage_records.hold_id', 'holds.id')
          .select(['usage_records.status as usage', 'holds.status', 'holds.captured'])
          .where('holds.user_id', '=', user.userId)
          .execute();
        assert.deepEqual([hold.status, hold.usage], ['settled', 'client_aborted']);
        const sent = upstream.calls.findLast((call) => call.model === LONG.upstreamModel)!.wordsSent;
        const charged = Number(hold.captured) / CREDIT;
        assert.ok(
          charged >= received && charged <= sent,
          `charged ${charged} words; the client received ${received}, the upstream sent ${sent}`,
        );
        count('holdsChecked', 1);
        await assertLedgerVerifies(env.baseUrl, env.adminToken);
      });
    },
    { config: { OPENAI_BASE_URL: upstream.baseUrl } },
  );
}
