import { startCpuMeasure } from './cpu.ts';
import { median, probe, warmUp, type Target } from './load.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import { createStore, provision, startTollgate, tollgateTarget, upstreamTarget } from './tollgate.ts';

/**
 * `node bench/http-layers.ts [rounds] [seconds] [warm-up seconds]`: what each layer under a gateway costs one call
 * at a time, where the concurrency-1 latency target is judged. Four systems in front of one mock upstream, each
 * a fresh process warmed up with calls one at a time, then timed the same way (the benchmark's concurrency-1
 * client), alternated over the rounds:
 * - the bare proxy (bench/bare-proxy.ts: node:http and undici, nothing parsed);
 * - the same through Fastify, the body parsed and serialised each way (bench/fastify-proxy.ts);
 * - that with Fastify's request log (pino, to a pipe);
 * - Tollgate on SQLite (auth, the hold and its settle, the usage record, its own request log).
 * Per system the medians over the rounds: p50 and p99 at the client, and the CPU per call of the process's main
 * thread and of its other threads (/proc). The differences between neighbouring rows are what a layer costs.
 */

const [roundsArg = '3', secondsArg = '8', warmupArg = '20'] = process.argv.slice(2);
const ROUNDS = Number(roundsArg);
const SECONDS = Number(secondsArg);
const WARMUP = Number(warmupArg);

interface Sample {
  p50: number;
  p99: number;
  main: number;
  other: number;
}

const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
const { store, dispose } = await createStore('sqlite');
try {
  const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
  /** Starts a proxy script; resolves its process and the chat target through it. */
  const proxy = async (script: string, env: Record<string, string> = {}) => {
    const child = spawnNode(script, [`bench/${script}`, upstreamUrl], { cwd: process.cwd(), env });
    const { url } = await firstJsonLine<{ url: string }>(child);
    return { child, target: upstreamTarget(url, CHAT_BODY), stop: () => child.stop() };
  };
  let keys: string[] = [];
  const systems: Array<[string, () => Promise<{ child: Child; target: Target; stop: () => Promise<void> }>]> = [
    ['Bare node:http proxy', () => proxy('bare-proxy.ts')],
    ['Fastify proxy (JSON parsed and serialised)', () => proxy('fastify-proxy.ts')],
    ['Fastify proxy with its request log', () => proxy('fastify-proxy.ts', { FASTIFY_PROXY_LOG: '1' })],
    [
      'Tollgate on SQLite',
      async () => {
        const instance = await startTollgate(store, upstreamUrl);
        if (keys.length === 0) keys = await provision(instance, 10);
        return {
          child: instance.child,
          target: tollgateTarget(instance, keys, CHAT_BODY),
          stop: () => instance.child.stop(15_000),
        };
      },
    ],
  ];
  const samples = new Map<string, Sample[]>(systems.map(([name]) => [name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, start] of systems) {
      const system = await start();
      try {
        await warmUp(system.target, WARMUP);
        const cell = await probe(system.target, {
          stream: false,
          connections: 1,
          seconds: SECONDS,
          warmupSeconds: 0,
          onMeasure: () => startCpuMeasure({ gatewayPid: system.child.pid, mockPid: mock.pid, postgres: false }),
        });
        const sample = { p50: cell.p50, p99: cell.p99, main: cell.cpu!.gatewayMain!, other: cell.cpu!.gatewayOther! };
        samples.get(name)!.push(sample);
        console.error(`round ${round}, ${name}: ${JSON.stringify(sample)}`);
      } finally {
        await system.stop();
      }
    }
  }
  console.log(`\nOne call at a time, ${ROUNDS} rounds of ${SECONDS} s after ${WARMUP} s of warm-up each; medians.\n`);
  console.log('| System | p50 ms | p99 ms | main thread µs a call | other threads µs a call |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, list] of samples) {
    const m = (key: keyof Sample) => median(list.map((s) => s[key]));
    console.log(
      `| ${name} | ${m('p50').toFixed(3)} | ${m('p99').toFixed(2)} | ${m('main').toFixed(0)} | ${m('other').toFixed(0)} |`,
    );
  }
} finally {
  await mock.stop();
  await dispose();
}
