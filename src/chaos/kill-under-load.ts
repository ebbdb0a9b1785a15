import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { selectedDatabases, startServeProcess, TestEnv } from '../testing/harness.ts';
import type { ChaosProfile } from './profile.ts';
import type { FaultUpstream } from './fault-upstream.ts';
import { wordsOf } from './fault-upstream.ts';
import {
  assertCreditsConserved,
  assertLedgerBalanced,
  assertLedgerVerifies,
  chat,
  createChaosUser,
  CREDIT,
  putChatModel,
  sweepExpiredHolds,
  type ChatOutcome,
  type ChaosUser,
} from './client.ts';
import { count } from './figures.ts';

/** The shortest hold lifetime the configuration allows: holds a kill orphaned expire soon after. */
const HOLD_TTL_SECONDS = 10;
/** Each call streams (or waits for) 6 words, 15 ms apart, so calls are in flight when the kill lands. */
const LOAD_MODEL = { id: 'chaos/load', upstreamModel: 'drip-6-15', words: 6 };
const USERS = 3;
/** Spare processes kept starting ahead of the kills. */
const STANDBYS = 2;
const CREDITS_PER_USER = 1_000_000;

/** Resolves once `predicate` holds, checking whenever a call ends. */
function whenever(predicate: () => boolean, onChange: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    if (predicate()) return resolve();
    const check = () => {
      if (!predicate()) return;
      onChange.delete(check);
      resolve();
    };
    onChange.add(check);
  });
}

/**
 * kill -9 of a gateway under load, `profile.kills` times per database, restarting it each time: concurrent
 * chat calls (streamed and not) run against a `tollgate serve` process until it is killed mid-flight.
 * Afterwards, with every hold's expiry passed and the sweep run, the ledger verifies, no hold is open, and
 * for every user the credits granted equal the credits available plus the credits captured: none was lost
 * or created by a death at any point of a call.
 *
 * The sweep runs on the in-process service with a settable clock moved past the holds' expiry, so the suite
 * never waits the 10 s lifetime out.
 */
export function killUnderLoadSuite(profile: ChaosProfile, upstream: FaultUpstream): void {
  for (const kind of selectedDatabases()) {
    describe(`kill -9 of a gateway under load [${kind}]`, () => {
      const env = new TestEnv(kind, { manualClock: true, config: { OPENAI_BASE_URL: upstream.baseUrl } });
      const gatewayEnv = { OPENAI_BASE_URL: upstream.baseUrl, HOLD_TTL_SECONDS: String(HOLD_TTL_SECONDS) };
      const children: ChildProcess[] = [];
      const spawn = () => startServeProcess(env, gatewayEnv).then((gateway) => (children.push(gateway.child), gateway));
      before(() => env.start());
      after(async () => {
        // A failed run may leave spares or a live gateway behind: they are this suite's own children.
        for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await env.stop();
      });

      it(`${profile.kills} kills under ${profile.loadConcurrency} concurrent calls: the ledger verifies, no hold outlives its expiry, no credit lost or created`, async () => {
        await putChatModel(env.baseUrl, env.adminToken, LOAD_MODEL.id, LOAD_MODEL.upstreamModel, 8);
        const users: ChaosUser[] = [];
        for (let i = 0; i < USERS; i++)
          users.push(await createChaosUser(env.baseUrl, env.adminToken, { credits: CREDITS_PER_USER }));
        const tally = { completed: 0, completedWhole: 0, cut: 0, sent: 0 };

        // Standby processes start while the current one is under load (as a supervisor keeps spares), so the
        // restarts cost little wall time.
        const standbys = Array.from({ length: Math.min(STANDBYS, profile.kills) }, () => spawn());
        for (let kill = 0; kill < profile.kills; kill++) {
          const gateway = await standbys.shift()!;
          if (kill + standbys.length + 1 < profile.kills) standbys.push(spawn());
          const exited = new Promise<void>((resolve) => gateway.child.once('exit', () => resolve()));
          const changed = new Set<() => void>();
          let running = true;
          let endedThisRound = 0;
          const worker = async (w: number) => {
            for (let i = 0; running; i++) {
              const user = users[(w + i) % users.length];
              const stream = (w + i) % 2 === 0;
              tally.sent++;
              const seen = await chat(gateway.baseUrl, user.key, {
                model: LOAD_MODEL.id,
                stream,
                messages: [{ role: 'user', content: `call ${w}.${i}` }],
              });
              assertAnswered(seen, stream);
              if (seen.cut) tally.cut++;
              else {
                tally.completed++;
                if (!stream) tally.completedWhole++;
              }
              endedThisRound++;
              for (const check of [...changed]) check();
            }
          };
          const workers = Array.from({ length: profile.loadConcurrency }, (_, w) => worker(w));
          // Under load for sure: some calls have completed, and the rest are in flight. The number of calls
          // let through varies from kill to kill, so deaths land at different points of a call.
          await whenever(() => endedThisRound >= profile.loadConcurrency + (kill % 4) * 3, changed);
          gateway.child.kill('SIGKILL');
          running = false;
          count('kills');
          count('faultsInjected');
          await exited;
          await Promise.all(workers);
        }
        count('requestsCut', tally.cut);
        assert.ok(tally.cut > 0, 'the kills cut calls in flight');
        assert.ok(tally.completed > 0, 'calls completed between the kills');

        // Every hold's expiry has passed (the clock is moved, not waited for); the sweep releases the orphans.
        env.manualClock.set(Date.now() + (HOLD_TTL_SECONDS + 1) * 1000);
        await sweepExpiredHolds(env.baseUrl, env.adminToken);
        await assertLedgerVerifies(env.baseUrl, env.adminToken);
        await assertLedgerBalanced(env.db);
        const granted = new Map(users.map((u) => [u.userId, CREDITS_PER_USER * CREDIT]));
        const swept = await env.db
          .selectFrom('holds')
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .where('status', '=', 'expired')
          .executeTakeFirstOrThrow();
        count('holdsSwept', Number(swept.n));
        const { captured, holds } = await assertCreditsConserved(env.db, granted);
        assert.ok(holds >= tally.completed, 'every completed call placed a hold');
        // A non-streamed answer is sent after its settlement, so each one the client received was charged. (A
        // stream is settled after its last frame: a death in between leaves its hold to the sweep, uncharged.)
        assert.ok(
          captured >= tally.completedWhole * LOAD_MODEL.words * CREDIT,
          'every non-streamed answer received was charged',
        );
      });
    });
  }
}

/** A call to a gateway that may die: it completed with the full answer, or its connection was cut. */
function assertAnswered(seen: ChatOutcome, stream: boolean): void {
  if (seen.cut) return;
  const what = JSON.stringify(seen).slice(0, 300);
  assert.equal(seen.status, 200, what);
  assert.equal(seen.content, wordsOf(LOAD_MODEL.words).join(''), what);
  if (stream) assert.equal(seen.frames!.at(-1)!.data, '[DONE]', what);
}
