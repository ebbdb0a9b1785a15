import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { hammer, probe, warmUp } from './load.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { profileMarkdown, summariseCpuProfile, type ProfileSummary, type SummaryOptions } from './cpuprofile.ts';
import { startCpuMeasure, type CpuPerCall } from './cpu.ts';
import { createStore, provision, startTollgate, tollgateTarget, type Store } from './tollgate.ts';
import { SERVE_RUNTIME } from '../src/cli.ts';

/**
 * CPU profile of Tollgate under load (64 connections unless told): the instance runs with `--cpu-prof`, the
 * profile is written when it stops, and the samples of the measured part alone (not start-up, not warm-up)
 * are summarised: the top self-time functions and files, and the time per call of each layer of a call.
 */

const PROFILE_DIR = resolve('.tmp/bench-profiles');

/** The chat request every benchmark cell sends (the model is set per target). */
export const CHAT_BODY = {
  messages: [{ role: 'user', content: 'Write one short sentence about toll roads.' }],
  max_tokens: 64,
};

/** Profiles an instance on `store` (already provisioned with `keys`, or provisioned here when `keys` is empty). */
export async function profileTollgate(
  store: Store,
  upstreamUrl: string,
  keys: string[],
  options: {
    stream: boolean;
    seconds: number;
    connections?: number;
    /** Unmeasured calls one at a time first, so that V8 has optimised the per-call code (as `npm run bench` does). */
    processWarmupSeconds?: number;
    /** The mock upstream's process, whose CPU per call is read beside the instance's (bench/cpu.ts). */
    mockPid: number;
  },
): Promise<{ file: string; summary: ProfileSummary; cpu?: CpuPerCall }> {
  const dir = join(PROFILE_DIR, `${store.dialect}-${options.stream ? 'stream' : 'json'}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  // A profiled serve does not re-execute itself (src/cli.ts SAMPLING_PROFILERS): its V8 flags are given here.
  const instance = await startTollgate(store, upstreamUrl, [
    ...SERVE_RUNTIME.nodeFlags,
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    '--cpu-prof-interval=250',
  ]);
  let measured: SummaryOptions = {};
  let cpu: CpuPerCall | undefined;
  try {
    if (keys.length === 0) keys = await provision(instance, 10);
    const connections = options.connections ?? 64;
    const target = tollgateTarget(instance, keys, CHAT_BODY);
    await warmUp(target, options.processWarmupSeconds ?? 0);
    // One connection is timed by the sequential client (as the benchmark's concurrency-1 cells are); more by autocannon.
    const cell = await (connections === 1 ? probe : hammer)(target, {
      stream: options.stream,
      connections,
      seconds: options.seconds,
      warmupSeconds: 1,
      onMeasure: () => {
        const fromMicros = monotonicMicros();
        const cpuOf = startCpuMeasure({
          gatewayPid: instance.child.pid,
          mockPid: options.mockPid,
          postgres: store.dialect === 'postgres',
        });
        return (calls) => {
          measured = { window: { fromMicros, toMicros: monotonicMicros() }, calls };
          return cpuOf(calls);
        };
      },
    });
    cpu = cell.cpu;
  } finally {
    await instance.child.stop(15_000);
  }
  const profile = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (!profile) throw new Error(`no .cpuprofile was written in ${dir}`);
  const file = join(dir, profile);
  return { file, summary: summariseCpuProfile(file, 15, measured), cpu };
}

/** Now on the monotonic clock, in µs: the clock of V8's profile timestamps (bench/cpuprofile.ts). */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

// `node bench/profile.ts [sqlite|postgres] [json|stream] [seconds] [connections] [warm-up seconds]`: profile one
// instance (under 64 connections unless told, after the given seconds of calls one at a time) and print the summary.
if (import.meta.main) {
  const [dialect = 'sqlite', kind = 'json', seconds = '8', connections = '64', warmup = '0'] = process.argv.slice(2);
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('dialect: sqlite or postgres');
  let mock: Child | undefined;
  const { store, dispose } = await createStore(dialect);
  try {
    mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
    const { url } = await firstJsonLine<{ url: string }>(mock);
    const { file, summary, cpu } = await profileTollgate(store, url, [], {
      stream: kind === 'stream',
      seconds: Number(seconds),
      connections: Number(connections),
      processWarmupSeconds: Number(warmup),
      mockPid: mock.pid,
    });
    console.log(`${file}\n\nCPU per call (µs): ${JSON.stringify(cpu)}\n\n${profileMarkdown(summary)}`);
  } finally {
    await mock?.stop();
    await dispose();
  }
  if (process.env.BENCH_KEEP_PROFILES !== '1') rmSync(PROFILE_DIR, { recursive: true, force: true });
}
