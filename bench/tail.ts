import { resolve } from 'node:path';
import { startCpuMeasure } from './cpu.ts';
import { probe, quantile } from './load.ts';
import { firstJsonLine, spawnNode } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import {
  createStore,
  messagesTarget,
  provision,
  responsesTarget,
  startTollgate,
  tollgateTarget,
  upstreamTarget,
} from './tollgate.ts';

/**
 * `node bench/tail.ts [sqlite|postgres] [seconds] [chat|responses|messages]`: where the concurrency-1 tail comes from. One call at a
 * time (the benchmark's concurrency-1 client), first to the mock upstream directly, then through a fresh
 * instance: the latency quantiles, and how many calls a second took longer than 1, 2, 5 and 10 ms. For the
 * instance also its own time for each call (the request log's `ms`: from Fastify's first hook to the
 * response's end) and its CPU per call by thread.
 *
 * A p99 is a count: at ~1,200 calls a second, 12 slow calls a second make it. The direct path's slow calls
 * are the machine's (the three processes share two cores); the calls slow at the client but not in the
 * instance's own time waited outside the request: for the event loop (a checkpoint, a collection) or for
 * the machine. `TMPDIR=/dev/shm` puts the SQLite database in memory, which takes the disk out.
 */

const [dialect = 'sqlite', secondsArg = '8', api = 'chat'] = process.argv.slice(2);
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('database: sqlite or postgres');
const SURFACES = { chat: tollgateTarget, responses: responsesTarget, messages: messagesTarget };
if (!(api in SURFACES)) throw new Error('surface: chat, responses or messages');
const targetOf = SURFACES[api as keyof typeof SURFACES];
/** The route whose request-log lines are the calls (the request log names routes as registered). */
const ROUTE = { chat: '/api/v1/chat/completions', responses: '/api/v1/responses', messages: '/api/v1/messages' }[
  api as keyof typeof SURFACES
];
const SECONDS = Number(secondsArg);
const THRESHOLDS_MS = [1, 2, 5, 10];

/** One row of the report, from latencies in ms. */
function row(label: string, latencies: number[]): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const over = THRESHOLDS_MS.map((ms) => (sorted.filter((value) => value > ms).length / SECONDS).toFixed(1));
  const q = (at: number) => quantile(sorted, at).toFixed(2);
  return `| ${label} | ${(sorted.length / SECONDS).toFixed(0)} | ${q(0.5)} | ${q(0.9)} | ${q(0.99)} | ${q(0.999)} | ${sorted.at(-1)?.toFixed(2)} | ${over.join(' | ')} |`;
}

/** The instance's own time (ms) of each call it logs while `recording()` holds. */
function serverTimes(onStdout: (listener: (chunk: string) => void) => void, recording: () => boolean): number[] {
  const times: number[] = [];
  let partial = '';
  onStdout((chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    if (!recording()) return;
    for (const line of lines) {
      if (!line.includes('"msg":"request"') || !line.includes(`"route":"${ROUTE}"`)) continue;
      times.push((JSON.parse(line) as { ms: number }).ms);
    }
  });
  return times;
}

const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
const { store, dispose } = await createStore(dialect);
try {
  const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
  const cell = { stream: false, connections: 1, seconds: SECONDS, warmupSeconds: 2, keepTimings: true };
  const directCell = await probe(upstreamTarget(upstreamUrl, CHAT_BODY), cell);

  const instance = await startTollgate(store, upstreamUrl, [], resolve('.'));
  try {
    const target = targetOf(instance, await provision(instance, 10), CHAT_BODY);
    let recording = false;
    const ownTimes = serverTimes(instance.child.onStdout, () => recording);
    const tollgateCell = await probe(target, {
      ...cell,
      onMeasure: () => {
        recording = true;
        return startCpuMeasure({ gatewayPid: instance.child.pid, mockPid: mock.pid, postgres: dialect === 'postgres' });
      },
    });
    await new Promise((done) => setTimeout(done, 200)); // the last calls' log lines
    recording = false;
    console.log(
      `${dialect}, ${api}, one call at a time for ${SECONDS} s after 2 s of warm-up${process.env.TMPDIR ? `, TMPDIR=${process.env.TMPDIR}` : ''}\n`,
    );
    console.log(
      `| Latency, ms | calls/s | p50 | p90 | p99 | p99.9 | max | ${THRESHOLDS_MS.map((ms) => `> ${ms} ms per s`).join(' | ')} |`,
    );
    console.log(`|---|${'---:|'.repeat(6 + THRESHOLDS_MS.length)}`);
    console.log(row('Direct (mock upstream)', directCell.totals!));
    console.log(row('Tollgate, at the client', tollgateCell.totals!));
    console.log(row("Tollgate's own time (request log)", ownTimes));
    const cpu = tollgateCell.cpu!;
    console.log(
      `\nTollgate's CPU per call: ${cpu.gatewayMain!.toFixed(0)} µs main thread, ${cpu.gatewayOther!.toFixed(0)} µs other threads${cpu.postgres === undefined ? '' : `; PostgreSQL ${cpu.postgres.toFixed(0)} µs`}; the mock ${cpu.mock.toFixed(0)} µs, the client ${cpu.loadGenerator.toFixed(0)} µs`,
    );
  } finally {
    await instance.child.stop(15_000);
  }
} finally {
  await mock.stop();
  await dispose();
}
