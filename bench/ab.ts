import { resolve } from 'node:path';
import { processMicros } from './cpu.ts';
import { hammer, median, probe, type CellResult } from './load.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import { createStore, provision, startTollgate, tollgateTarget } from './tollgate.ts';

/**
 * `node bench/ab.ts <checkout A> <checkout B> [sqlite|postgres] [rounds] [seconds]`: compares two checkouts
 * of Tollgate (a change and its base) in one run, on the same machine at the same time, so that what the
 * machine's load does to one it does to the other. Each round starts a fresh instance of A then of B (each
 * on its own store, against one mock upstream) and measures non-streaming chat at concurrency 1 (probe: p50,
 * p99) and 64 (autocannon: req/s, and the instance's CPU time per call, which the machine's other load
 * skews less than the rates). Prints every round and the medians, and B's figures as ratios of A's.
 * A checkout needs its own node_modules (a symlink to this one's will do).
 */

const [a, b, dialect = 'sqlite', roundsArg = '3', secondsArg = '4'] = process.argv.slice(2);
if (!a || !b) throw new Error('usage: node bench/ab.ts <checkout A> <checkout B> [sqlite|postgres] [rounds] [seconds]');
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('database: sqlite or postgres');
const ROUNDS = Number(roundsArg);
const SECONDS = Number(secondsArg);

interface Round {
  c1: CellResult;
  c64: CellResult;
  /** The instance's CPU time (user + system) per completed call in the concurrency-64 cell, µs. */
  cpuMicrosPerCall: number;
  peakRssMiB: number;
}

const mock: Child = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
const disposers: Array<() => Promise<void>> = [];
try {
  const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
  const measureOnce = async (checkout: string): Promise<Round> => {
    const { store, dispose } = await createStore(dialect);
    disposers.push(dispose);
    const instance = await startTollgate(store, upstreamUrl, [], resolve(checkout));
    try {
      const target = tollgateTarget(instance, await provision(instance, 10), CHAT_BODY);
      const c1 = await probe(target, { stream: false, connections: 1, seconds: SECONDS, warmupSeconds: 1 });
      await hammer(target, { stream: false, connections: 64, seconds: 1, warmupSeconds: 0 });
      const cpuBefore = processMicros(instance.child.pid);
      const c64 = await hammer(target, { stream: false, connections: 64, seconds: SECONDS, warmupSeconds: 0 });
      const cpuMicrosPerCall = (processMicros(instance.child.pid) - cpuBefore) / c64.total;
      return { c1, c64, cpuMicrosPerCall, peakRssMiB: instance.child.peakRssMiB() };
    } finally {
      await instance.child.stop(15_000);
    }
  };
  const rounds: Record<'A' | 'B', Round[]> = { A: [], B: [] };
  const line = (r: Round) =>
    `c=1 p50 ${r.c1.p50.toFixed(2)} p99 ${r.c1.p99.toFixed(2)} ms, c=64 ${r.c64.rps.toFixed(0)} req/s and ${r.cpuMicrosPerCall.toFixed(0)} µs CPU/call, peak RSS ${r.peakRssMiB.toFixed(0)} MiB${r.c1.failed + r.c64.failed ? `, ${r.c1.failed + r.c64.failed} FAILED` : ''}`;
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, checkout] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const result = await measureOnce(checkout);
      rounds[name].push(result);
      console.log(`round ${round} ${name}: ${line(result)}`);
    }
  }
  const summary = (name: 'A' | 'B') => ({
    p50: median(rounds[name].map((r) => r.c1.p50)),
    p99: median(rounds[name].map((r) => r.c1.p99)),
    rps: median(rounds[name].map((r) => r.c64.rps)),
    rss: median(rounds[name].map((r) => r.peakRssMiB)),
    cpu: median(rounds[name].map((r) => r.cpuMicrosPerCall)),
  });
  const [sa, sb] = [summary('A'), summary('B')];
  console.log(
    `median A (${a}): c=1 p50 ${sa.p50.toFixed(2)} p99 ${sa.p99.toFixed(2)} ms, c=64 ${sa.rps.toFixed(0)} req/s, ${sa.cpu.toFixed(0)} µs CPU/call, RSS ${sa.rss.toFixed(0)} MiB`,
  );
  console.log(
    `median B (${b}): c=1 p50 ${sb.p50.toFixed(2)} p99 ${sb.p99.toFixed(2)} ms, c=64 ${sb.rps.toFixed(0)} req/s, ${sb.cpu.toFixed(0)} µs CPU/call, RSS ${sb.rss.toFixed(0)} MiB`,
  );
  console.log(
    `B/A: c=1 p50 ${(sb.p50 / sa.p50).toFixed(3)}×, p99 ${(sb.p99 / sa.p99).toFixed(3)}×, c=64 req/s ${(sb.rps / sa.rps).toFixed(3)}×, CPU/call ${(sb.cpu / sa.cpu).toFixed(3)}×, RSS ${(sb.rss / sa.rss).toFixed(3)}×`,
  );
} finally {
  await mock.stop(3_000);
  for (const dispose of disposers) await dispose().catch(() => {});
}
