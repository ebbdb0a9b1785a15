/**
 * A simulation of per-instance credit leases (docs/scaling.md, "Past one primary"), the design telecom
 * online charging uses (Diameter Gy: reserve quota units, spend them locally, report usage, ask for more):
 * each gateway instance reserves a lease of a user's credits from the wallet (a hold, as today), serves
 * that user's calls from it in memory, and settles what they used in one batched movement. The database
 * then sees two writes per lease instead of two per call.
 *
 * The model is in memory; what it checks is the design's arithmetic, after every step of random
 * interleavings of calls, grants, reports, crashes and expiries across instances:
 * - no overspend: what calls were served never exceeds the credits the user had (leases are holds, and an
 *   instance serves only from the unspent part of its own lease), but for what crashes lost (below);
 * - conservation: balance + everything captured = the initial balance, and reserved = the sum of the
 *   leases, at every step;
 * - a crash loses at most the unreported use of the crashed instance's lease (revenue, never user credit),
 *   and the lease's rest returns to the user at its expiry.
 * It also reports database writes per call and how often a call is refused although the user, across all
 * instances, still had the credits (stranded lease), for a few lease sizes.
 *
 * `node bench/leases.ts [seeds]`; exits non-zero when an invariant breaks.
 */

const SEEDS = Number(process.argv[2] ?? 200);

/** A small deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Instance {
  lease: number;
  used: number;
  crashed: boolean;
}

function simulate(seed: number, leaseSize: number) {
  const random = prng(seed);
  const initial = 100_000 + Math.floor(random() * 900_000);
  const wallet = { balance: initial, reserved: 0 };
  let captured = 0;
  let served = 0;
  let lost = 0;
  let writes = 0;
  let calls = 0;
  let refused = 0;
  let strandedRefusals = 0;
  const instances: Instance[] = Array.from({ length: 2 + Math.floor(random() * 6) }, () => ({
    lease: 0,
    used: 0,
    crashed: false,
  }));
  const check = (step: string) => {
    const fail = (what: string) => {
      throw new Error(`seed ${seed}, lease ${leaseSize}, after ${step}: ${what}`);
    };
    if (wallet.reserved !== instances.reduce((sum, i) => sum + i.lease, 0))
      fail('reserved is not the sum of the leases');
    if (wallet.balance - wallet.reserved < 0) fail('available went negative');
    if (wallet.balance + captured !== initial) fail('credits created or lost');
    // Free service comes only from crashed leases' unreported use, which the expiry gives up.
    if (served - lost > initial) fail('served more than the user had, beyond what crashes lost');
    if (instances.some((i) => i.used > i.lease)) fail('an instance spent beyond its lease');
  };
  /** The grant: one atomic movement on the wallet (a hold), of at most what is available. */
  const grant = (instance: Instance, want: number) => {
    const amount = Math.min(want, wallet.balance - wallet.reserved);
    if (amount <= 0) return;
    writes++;
    wallet.reserved += amount;
    instance.lease += amount;
  };
  /** The report: one batched settlement of what the lease's calls used; the lease goes on with the rest. */
  const report = (instance: Instance) => {
    if (instance.used === 0) return;
    writes++;
    wallet.balance -= instance.used;
    wallet.reserved -= instance.used;
    captured += instance.used;
    instance.lease -= instance.used;
    instance.used = 0;
  };
  for (let step = 0; step < 2_000; step++) {
    const instance = instances[Math.floor(random() * instances.length)]!;
    const roll = random();
    if (instance.crashed) {
      // The sweep expires the crashed instance's lease: its rest goes back to the user, its unreported use is lost.
      if (roll < 0.2) {
        writes++;
        if (instance.used > instance.lease) throw new Error(`seed ${seed}: a crash lost more than its lease`);
        lost += instance.used;
        wallet.reserved -= instance.lease;
        instance.lease = 0;
        instance.used = 0;
        instance.crashed = false;
        check('expiry');
      }
      continue;
    }
    if (roll < 0.85) {
      calls++;
      const worstCase = 100 + Math.floor(random() * 2_000);
      if (instance.lease - instance.used < worstCase) {
        report(instance);
        grant(instance, Math.max(leaseSize, worstCase));
      }
      if (instance.lease - instance.used < worstCase) {
        refused++;
        const oracleAvailable =
          wallet.balance - wallet.reserved + instances.reduce((sum, i) => sum + (i.crashed ? 0 : i.lease - i.used), 0);
        if (oracleAvailable >= worstCase) strandedRefusals++;
        check('refusal');
        continue;
      }
      const cost = Math.floor(random() * worstCase);
      instance.used += cost;
      served += cost;
      check('call');
    } else if (roll < 0.97) {
      report(instance);
      check('report');
    } else {
      instance.crashed = true;
      check('crash');
    }
  }
  for (const instance of instances) {
    if (!instance.crashed) report(instance);
    lost += instance.used;
    wallet.reserved -= instance.lease;
    instance.lease = 0;
    instance.used = 0;
  }
  check('the end');
  if (captured + lost !== served)
    throw new Error(`seed ${seed}: served ${served} is not captured ${captured} + lost ${lost}`);
  return { calls, writes, refused, strandedRefusals, lostShare: lost / Math.max(1, served) };
}

console.log(
  '| Lease (micro-credits; worst case of a call ~1,100, cost ~550) | Seeds | Calls | DB writes per call | Refused | Refused with credits stranded in other leases | Revenue lost to crashes |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|');
for (const multiple of [1, 10, 100]) {
  const totals = { calls: 0, writes: 0, refused: 0, strandedRefusals: 0, lostShare: 0 };
  for (let seed = 1; seed <= SEEDS; seed++) {
    const result = simulate(seed, multiple * 1_000);
    totals.calls += result.calls;
    totals.writes += result.writes;
    totals.refused += result.refused;
    totals.strandedRefusals += result.strandedRefusals;
    totals.lostShare += result.lostShare;
  }
  const pct = (n: number) => `${((100 * n) / totals.calls).toFixed(1)}%`;
  console.log(
    `| ${(multiple * 1_000).toLocaleString('en')} | ${SEEDS} | ${totals.calls} | ${(totals.writes / totals.calls).toFixed(3)} | ${pct(totals.refused)} | ${pct(totals.strandedRefusals)} | ${((100 * totals.lostShare) / SEEDS).toFixed(2)}% |`,
  );
}
console.log(`\nEvery invariant held after every step of ${SEEDS} seeds × 3 lease sizes × 2,000 steps.`);
