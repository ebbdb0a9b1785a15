import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { hammer, probe, quantile, warmUp, type CellResult, type Target } from './load.ts';
import { installPortkey, PORTKEY_VERSION, portkeyTarget, startPortkey } from './portkey.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { processMicros, startCpuMeasure } from './cpu.ts';
import { CHAT_BODY, profileTollgate } from './profile.ts';
import { profileMarkdown } from './cpuprofile.ts';
import { agentLoopShape, runAgentLoop, type AgentLoopRun } from './agent-loop.ts';
import {
  agentLoopSection,
  BARE_PROXY_LABEL,
  benchmarksMarkdown,
  figureTables,
  judgeTargets,
  proxyCeiling,
  targetsTable,
  updateReadme,
  type AgentLoopRow,
  type RunInfo,
  type SystemResult,
} from './report.ts';
import { seedScale } from './seed.ts';
import {
  createStore,
  messagesTarget,
  MODEL_ID,
  POSTGRES_URL,
  provision,
  responsesTarget,
  startTollgate,
  tollgateTarget,
  UPSTREAM_MODEL,
  upstreamTarget,
  verifyLedger,
  withPostgres,
  type Store,
} from './tollgate.ts';

/**
 * `npm run bench`: one run, on loopback, against one mock upstream — the mock called directly, a bare Node
 * proxy (the floor of any proxy's cost), Portkey's gateway, and Tollgate on SQLite and on PostgreSQL, each
 * with 10 keys and then with the large data set — written to BENCHMARKS.md and the README. Bounded: about 11
 * minutes in full, under 3 minutes with BENCH_QUICK=1.
 *
 * Settings (environment): BENCH_QUICK=1 (short cells, 10,000 keys instead of 1,000,000), BENCH_SECONDS,
 * BENCH_WARMUP_SECONDS, BENCH_PROCESS_WARMUP_SECONDS (see PROCESS_WARMUP), BENCH_DATABASES=sqlite,postgres,
 * BENCH_PORTKEY=0 (skip the baseline), BENCH_PROFILE=0 (no profile when a target is missed),
 * BENCH_UPSTREAM_LATENCY_MS / _CHUNK_DELAY_MS / _WORDS (the mock), BENCH_DATABASE_URL. `node bench/run.ts
 * --render` rewrites the reports from the last run's saved figures.
 */

const USAGE = `npm run bench            one full run (~12 minutes; keep the machine otherwise idle), written to
                         BENCHMARKS.md and the README's table
npm run bench -- --render the reports again from the last run's saved figures, nothing measured
npm run bench -- --help   this text

Environment: BENCH_QUICK=1 (under 3 minutes, short cells), BENCH_SECONDS, BENCH_WARMUP_SECONDS,
BENCH_PROCESS_WARMUP_SECONDS, BENCH_DATABASES=sqlite,postgres, BENCH_DATABASE_URL, BENCH_PORTKEY=0,
BENCH_PROFILE=0, BENCH_UPSTREAM_LATENCY_MS, BENCH_UPSTREAM_CHUNK_DELAY_MS, BENCH_UPSTREAM_WORDS,
BENCH_LOG_LEVEL, BENCH_SERVE_CODE=source, BENCH_NODE_FLAGS. Other benchmarks: docs/scaling.md, "How to reproduce".`;

// Anything but the two known arguments stops here, before a 12-minute run starts by mistake.
const [argument] = process.argv.slice(2);
if (argument === '--help' || argument === '-h') {
  console.log(USAGE);
  process.exit(0);
}
if (argument !== undefined && argument !== '--render') {
  console.error(`bench: unknown argument ${argument}\n\n${USAGE}`);
  process.exit(2);
}

const env = process.env;
const QUICK = env.BENCH_QUICK === '1';
const SECONDS = Number(env.BENCH_SECONDS ?? (QUICK ? 1.5 : 6));
const WARMUP = Number(env.BENCH_WARMUP_SECONDS ?? (QUICK ? 0.5 : 2));
const TTFT_SECONDS = Math.min(3, SECONDS);
/**
 * A fresh process's warm-up before its first cell, one call at a time. Why: V8 moves a process's per-call code
 * to its optimizing compiler only after many calls, compiling on helper threads that share the cores. One call
 * at a time from a fresh start, that took Tollgate ~20 s (~25,000 calls; `--trace-opt`: ~800 TurboFan
 * compilations, then ~5 a second), and until then the concurrency-1 p99 measured that wave (3.6–3.9 ms in the
 * first 20 s, 1.9–2.1 after; docs/scaling.md, twelfth pass). Every system gets the same.
 */
const PROCESS_WARMUP = Number(env.BENCH_PROCESS_WARMUP_SECONDS ?? (QUICK ? 3 : 25));
const SCALE = QUICK ? { users: 1_000, keys: 10_000 } : { users: 100_000, keys: 1_000_000 };
const DIALECTS = (env.BENCH_DATABASES ?? 'sqlite,postgres').split(',').filter(Boolean) as Array<'sqlite' | 'postgres'>;
const WITH_PORTKEY = env.BENCH_PORTKEY !== '0';
const PROFILE_ON_MISS = env.BENCH_PROFILE !== '0' && !QUICK;
const KEYS = 10;
/** The agent loops: 8 conversations of 20 turns (5 in a quick run), 100 K characters resent and 8 K added a turn. */
const AGENT_LOOP = agentLoopShape(QUICK ? { turns: 5 } : {});
const AGENT_LOOP_WORDS = `${AGENT_LOOP.agents} conversations at once, ${AGENT_LOOP.turns} non-streaming turns each, from a ${AGENT_LOOP.systemChars.toLocaleString('en')}-character system prompt plus a ${AGENT_LOOP.toolChars.toLocaleString('en')}-character tool result a turn, the whole conversation resent each turn`;
/** The agent loops of every system, in the order measured. */
const agentLoops: AgentLoopRow[] = [];

/** Runs the agent loops against one system and keeps its row (see {@link AgentLoopRow}). */
async function measureAgentLoop(
  label: string,
  kind: SystemResult['kind'],
  run: () => Promise<AgentLoopRun>,
  gatewayPid?: number,
): Promise<void> {
  const before = gatewayPid === undefined ? 0 : processMicros(gatewayPid) / 1000;
  const result = await run();
  const calls = result.latencies.length;
  const q = (values: number[], at: number) => quantile(values, at);
  agentLoops.push({
    label,
    kind,
    shape: AGENT_LOOP_WORDS,
    calls,
    p50: q(result.latencies, 0.5),
    p99: q(result.latencies, 0.99),
    bystanderCalls: result.bystander.length,
    bystanderP50: q(result.bystander, 0.5),
    bystanderP99: q(result.bystander, 0.99),
    ...(gatewayPid === undefined ? {} : { cpuMsPerCall: (processMicros(gatewayPid) / 1000 - before) / calls }),
  });
  log(
    `${label} · agent loops: ${calls} calls, p50 ${q(result.latencies, 0.5).toFixed(1)} ms, p99 ${q(result.latencies, 0.99).toFixed(1)} ms; bystander p50 ${q(result.bystander, 0.5).toFixed(1)} ms`,
  );
}

const started = performance.now();

const log = (message: string) =>
  console.log(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(3)}s] ${message}`);
const fmt = (c: CellResult) =>
  `${c.rps.toFixed(0)} req/s, p50 ${c.p50.toFixed(2)} ms, p99 ${c.p99.toFixed(2)} ms${c.ttftP50 === undefined ? '' : `, TTFT p50 ${c.ttftP50.toFixed(2)} ms`}${c.failed ? `, ${c.failed} FAILED` : ''}`;

/**
 * The BENCHMARKS.md section of a profile of Tollgate on `store` (its large data set) at `connections`: a fresh
 * instance warmed up as every benchmarked process is, then one cell of the non-streaming request, of which
 * only the measured part is summarised. A profile explains a miss; it is not a figure: one retry, then the
 * section says it is missing.
 */
async function profileSection(
  { store, keys }: { store: Store; keys: string[] },
  upstreamUrl: string,
  connections: number,
): Promise<string[]> {
  const take = () =>
    profileTollgate(store, upstreamUrl, keys, {
      stream: false,
      seconds: connections === 1 ? Math.max(SECONDS, 8) : SECONDS,
      connections,
      processWarmupSeconds: PROCESS_WARMUP,
      mockPid,
    });
  const profiled = await take().catch((first) => {
    log(
      `profiling failed once (${String(first.message ?? first)
        .split('\n')
        .slice(0, 3)
        .join(' ')}); retrying`,
    );
    return take().catch((error) => error as Error);
  });
  const name = store.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  if (profiled instanceof Error) {
    log(`profiling failed: ${profiled.message}`);
    return [
      `### Tollgate on ${name}, concurrency ${connections}: the profile could not be taken (${profiled.message.split('\n')[0]})`,
      '',
    ];
  }
  const { file, summary, cpu } = profiled;
  const calls = summary.calls ? `, ${summary.calls.toLocaleString('en')} calls` : '';
  const threads =
    cpu?.gatewayMain === undefined
      ? ''
      : ` Read from /proc over the same part: ${cpu.gatewayMain.toFixed(0)} µs of the main thread and ${cpu.gatewayOther?.toFixed(0)} µs of the other threads a call.`;
  return [
    `### Tollgate on ${name}, non-streaming, concurrency ${connections}, large data set (${(summary.totalMs / 1000).toFixed(1)} s of samples${calls})`,
    '',
    `\`node --cpu-prof\` on the serve process (sources, not the bundle), after ${PROCESS_WARMUP} s of calls one at a time; only the samples of the measured cell are summarised (the whole profile, start-up included: \`node bench/cpuprofile.ts ${file.replace(`${process.cwd()}/`, '')}\`). The layers add every sample up by the code it ran in (bench/cpuprofile.ts \`LAYERS\`), idle included.${threads}`,
    '',
    profileMarkdown(summary),
    '',
  ];
}

/** Warms a fresh process up ({@link PROCESS_WARMUP}); nothing of it is measured. */
async function warmProcess(label: string, target: Target): Promise<void> {
  if (PROCESS_WARMUP <= 0) return;
  await warmUp(target, PROCESS_WARMUP);
  log(`${label} · warmed up for ${PROCESS_WARMUP} s`);
}

/** Every cell of one system: concurrency 1 with the probe, then concurrency 64 with autocannon, then TTFT at 64. */
async function measure(
  label: string,
  target: Target,
  who: { gatewayPid?: number; postgres?: boolean } = {},
): Promise<Omit<SystemResult, 'label' | 'kind'>> {
  // CPU per call is read around the non-streaming cells: the split the report's CPU table shows.
  const onMeasure = () => startCpuMeasure({ mockPid, postgres: false, ...who });
  const json1 = await probe(target, {
    stream: false,
    connections: 1,
    seconds: SECONDS,
    warmupSeconds: WARMUP / 2,
    onMeasure,
  });
  log(`${label} · json c=1: ${fmt(json1)}`);
  const stream1 = await probe(target, { stream: true, connections: 1, seconds: SECONDS, warmupSeconds: WARMUP / 2 });
  log(`${label} · stream c=1: ${fmt(stream1)}`);
  const json64 = await hammer(target, {
    stream: false,
    connections: 64,
    seconds: SECONDS,
    warmupSeconds: WARMUP,
    onMeasure,
  });
  log(`${label} · json c=64: ${fmt(json64)}`);
  const stream64 = await hammer(target, { stream: true, connections: 64, seconds: SECONDS, warmupSeconds: WARMUP });
  log(`${label} · stream c=64: ${fmt(stream64)}`);
  const ttft64 = await probe(target, { stream: true, connections: 64, seconds: TTFT_SECONDS, warmupSeconds: 0 });
  log(`${label} · stream c=64 (probe): ${fmt(ttft64)}`);
  return { json1, stream1, json64, stream64, ttft64 };
}

/** The mock upstream's process, whose CPU per call every cell reads. */
let mockPid = 0;

/** Children and stores to clean up however the run ends. */
const children = new Set<Child>();
const disposers: Array<() => Promise<void>> = [];
async function cleanUp(): Promise<void> {
  await Promise.all([...children].map((child) => child.stop(3_000)));
  for (const dispose of disposers.splice(0))
    await dispose().catch((error) => console.error(`clean-up failed: ${error.message}`));
}
process.on('SIGINT', () => void cleanUp().then(() => process.exit(130)));

/** Measures Tollgate on one database: 10 keys, then the large data set seeded into the same store. */
async function measureTollgate(
  dialect: 'sqlite' | 'postgres',
  upstreamUrl: string,
  results: SystemResult[],
  portkeyBeside?: () => Promise<CellResult>,
): Promise<{ store: Store; keys: string[] }> {
  const name = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const { store, dispose } = await createStore(dialect);
  disposers.push(dispose);
  let keys: string[] = [];
  for (const scale of ['small', 'large'] as const) {
    if (scale === 'large') {
      const seeding = performance.now();
      await seedScale(store, SCALE.users, SCALE.keys);
      log(
        `${name}: seeded ${SCALE.users.toLocaleString('en')} users and ${SCALE.keys.toLocaleString('en')} keys in ${((performance.now() - seeding) / 1000).toFixed(1)} s`,
      );
    }
    const instance = await startTollgate(store, upstreamUrl);
    children.add(instance.child);
    try {
      if (scale === 'small') keys = await provision(instance, KEYS);
      const label = `Tollgate · ${name} · ${scale === 'small' ? `${KEYS} keys` : `${SCALE.keys.toLocaleString('en')} keys, ${SCALE.users.toLocaleString('en')} users`}`;
      const who = { gatewayPid: instance.child.pid, postgres: dialect === 'postgres' };
      const chat = tollgateTarget(instance, keys, CHAT_BODY);
      await warmProcess(label, chat);
      const figures = await measure(label, chat, who);
      const portkeyJson64 = await portkeyBeside?.();
      // The same request through the other API surfaces on the 10-key instance: their added latency beside chat's.
      const responses =
        scale === 'small'
          ? await measure(`${label} · Responses`, responsesTarget(instance, keys, CHAT_BODY), who)
          : null;
      const messages =
        scale === 'small' ? await measure(`${label} · Messages`, messagesTarget(instance, keys, CHAT_BODY), who) : null;
      const ledger = await verifyLedger(instance);
      results.push({
        label,
        kind: 'tollgate',
        dialect,
        scale,
        ...figures,
        ...(portkeyJson64 ? { portkeyJson64 } : {}),
        peakRssMB: (instance.child.peakRssMiB() * 1024 * 1024) / 1e6,
        ledger: `${ledger.ok ? 'verifies' : 'DOES NOT VERIFY'} (${ledger.detail})`,
      });
      if (responses) results.push({ label: `${label} · Responses`, kind: 'surface', dialect, scale, ...responses });
      if (messages) results.push({ label: `${label} · Messages`, kind: 'surface', dialect, scale, ...messages });
      log(
        `${label}: peak RSS ${instance.child.peakRssMiB().toFixed(0)} MiB; ledger ${ledger.ok ? 'verifies' : 'DOES NOT VERIFY'}`,
      );
    } finally {
      await instance.child.stop();
      children.delete(instance.child);
    }
  }
  // The agent loops on an instance of their own, so that their long bodies do not count in the judged rows'
  // peak memory; the 10 keys: eight agents and the bystander.
  const instance = await startTollgate(store, upstreamUrl);
  children.add(instance.child);
  try {
    const label = `Tollgate · ${name} · ${KEYS} keys`;
    await measureAgentLoop(
      label,
      'tollgate',
      () => runAgentLoop(`${instance.baseUrl}/api/v1/chat/completions`, MODEL_ID, keys, AGENT_LOOP),
      instance.child.pid,
    );
    agentLoops.at(-1)!.peakRssMB = (instance.child.peakRssMiB() * 1024 * 1024) / 1e6;
  } finally {
    await instance.child.stop();
    children.delete(instance.child);
  }
  return { store, keys };
}

/** The machine, as the report states it. */
async function machine(): Promise<string[]> {
  const lines = [
    `CPU: ${cpus()[0]?.model ?? 'unknown'}, ${availableParallelism()} cores available (nproc)`,
    `Memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `Node ${process.version}, Linux ${release()}`,
    `SQLite ${(new DatabaseSync(':memory:').prepare('select sqlite_version() as v').get() as { v: string }).v} (node:sqlite)`,
  ];
  if (DIALECTS.includes('postgres'))
    lines.push(
      await withPostgres(async (client) => (await client.query('SHOW server_version')).rows[0].server_version).then(
        (v) => `PostgreSQL ${v} on the same machine (${POSTGRES_URL.replace(/\/\/[^@]*@/, '//')})`,
      ),
    );
  return lines;
}

async function main(): Promise<void> {
  log(
    `start: ${QUICK ? 'quick' : 'full'} run, ${SECONDS} s per cell after ${WARMUP} s of warm-up; databases ${DIALECTS.join(', ')}`,
  );
  if (WITH_PORTKEY) {
    log(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into .tmp/portkey (skipped when present)`);
    installPortkey();
  }
  const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], {
    cwd: process.cwd(),
    env: Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('BENCH_UPSTREAM_'))) as Record<
      string,
      string
    >,
  });
  children.add(mock);
  mockPid = mock.pid;
  const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
  const results: SystemResult[] = [];

  const directBody = { ...CHAT_BODY, model: UPSTREAM_MODEL };
  const directTarget = upstreamTarget(upstreamUrl, CHAT_BODY);
  await warmProcess('direct', directTarget);
  results.push({
    label: 'Direct (mock upstream, no gateway)',
    kind: 'direct',
    ...(await measure('direct', directTarget)),
  });

  // A short loop first, not kept: the mock's first long bodies run cold, and the direct path is the baseline.
  await runAgentLoop(`${upstreamUrl}/v1/chat/completions`, UPSTREAM_MODEL, ['x', 'x'], { ...AGENT_LOOP, turns: 2 });
  await measureAgentLoop('Direct (mock upstream, no gateway)', 'direct', () =>
    runAgentLoop(`${upstreamUrl}/v1/chat/completions`, UPSTREAM_MODEL, ['x', 'x'], AGENT_LOOP),
  );

  const bare = spawnNode('bare-proxy', ['bench/bare-proxy.ts', upstreamUrl], { cwd: process.cwd() });
  children.add(bare);
  try {
    const { url: bareUrl } = await firstJsonLine<{ url: string }>(bare);
    const bareTarget = upstreamTarget(bareUrl, CHAT_BODY);
    await warmProcess(BARE_PROXY_LABEL, bareTarget);
    const figures = await measure(BARE_PROXY_LABEL, bareTarget, { gatewayPid: bare.pid });
    await measureAgentLoop(
      BARE_PROXY_LABEL,
      'bare',
      () => runAgentLoop(`${bareUrl}/v1/chat/completions`, UPSTREAM_MODEL, ['x', 'x'], AGENT_LOOP),
      bare.pid,
    );
    results.push({
      label: BARE_PROXY_LABEL,
      kind: 'bare',
      ...figures,
      peakRssMB: (bare.peakRssMiB() * 1024 * 1024) / 1e6,
    });
  } finally {
    await bare.stop();
    children.delete(bare);
  }

  // Portkey stays up (idle) while Tollgate is measured: its concurrency-64 cell runs again right after each
  // Tollgate instance's, so the judged ratio compares two figures minutes apart at most. This machine's speed
  // drifts (the same build measured 1,500 and 2,600 req/s a quarter of an hour apart), so a ratio to one
  // Portkey figure from the start of the run could judge the machine rather than the gateways.
  const portkey = WITH_PORTKEY ? await startPortkey() : undefined;
  let portkeyBeside: (() => Promise<CellResult>) | undefined;
  if (portkey) {
    children.add(portkey.child);
    const label = `Portkey gateway ${PORTKEY_VERSION}`;
    const target = portkeyTarget(portkey.baseUrl, upstreamUrl, directBody);
    await warmProcess(label, target);
    const figures = await measure(label, target, { gatewayPid: portkey.child.pid });
    results.push({ label, kind: 'portkey', ...figures, peakRssMB: (portkey.child.peakRssMiB() * 1024 * 1024) / 1e6 });
    await measureAgentLoop(
      label,
      'portkey',
      () =>
        runAgentLoop(`${portkey.baseUrl}/v1/chat/completions`, UPSTREAM_MODEL, ['x', 'x'], AGENT_LOOP, {
          'x-portkey-provider': 'openai',
          'x-portkey-custom-host': `${upstreamUrl}/v1`,
        }),
      portkey.child.pid,
    );
    portkeyBeside = async () => {
      const cell = await hammer(target, { stream: false, connections: 64, seconds: SECONDS, warmupSeconds: WARMUP });
      log(`Portkey beside it · json c=64: ${fmt(cell)}`);
      return cell;
    };
  }

  const stores = new Map<string, { store: Store; keys: string[] }>();
  try {
    for (const dialect of DIALECTS)
      stores.set(dialect, await measureTollgate(dialect, upstreamUrl, results, portkeyBeside));
  } finally {
    if (portkey) {
      await portkey.child.stop();
      children.delete(portkey.child);
    }
  }

  const targets = judgeTargets(results);
  const profiles: string[] = [];
  if (PROFILE_ON_MISS) {
    for (const dialect of DIALECTS) {
      const missed = targets.filter((t) => t.values[dialect] && !t.values[dialect].met);
      // A latency target at concurrency 1 is explained by a profile at concurrency 1; any other by one at 64.
      const atOne = missed.filter((t) => t.target.includes('concurrency 1,'));
      const connectionCounts = [...(missed.length > atOne.length ? [64] : []), ...(atOne.length ? [1] : [])];
      for (const connections of connectionCounts) {
        const why = (connections === 1 ? atOne : missed.filter((t) => !atOne.includes(t))).map((t) => t.target);
        log(`profiling Tollgate on ${dialect} at concurrency ${connections} (missed: ${why.join('; ')})`);
        profiles.push(...(await profileSection(stores.get(dialect)!, upstreamUrl, connections)));
      }
    }
  }

  const command = QUICK ? 'BENCH_QUICK=1 npm run bench' : 'npm run bench';
  const info: RunInfo = {
    command,
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    machine: await machine(),
    settings: [
      `Everything on loopback on this one machine: the load generator (this script), the mock upstream, and the system under test, each its own process; the ${availableParallelism()} cores are shared by all three.`,
      `The mock upstream (bench/mock-upstream.ts, the tests' OpenAI-compatible mock) answers at once (latency ${env.BENCH_UPSTREAM_LATENCY_MS ?? 0} ms, ${env.BENCH_UPSTREAM_WORDS ?? 16} content chunks per stream, ${env.BENCH_UPSTREAM_CHUNK_DELAY_MS ?? 0} ms between chunks), so the figures measure the gateways' own cost.`,
      `Request: \`${JSON.stringify(CHAT_BODY)}\` plus the model; streams ask for \`stream_options.include_usage\`.`,
      `Concurrency 1: a sequential keep-alive node:http client timing each request with performance.now() (autocannon's latency histogram has 1 ms resolution, too coarse for a 1 ms target). Concurrency 64: autocannon ${SECONDS} s after ${WARMUP} s of warm-up. TTFT at concurrency 64: the node:http client, 64 loops, ${TTFT_SECONDS} s.`,
      `Warm-up: every process (the mock, the bare proxy, Portkey, each Tollgate instance) first serves ${PROCESS_WARMUP} s of the non-streaming request one call at a time, unmeasured, so that V8 has compiled its per-call code with its optimizing compiler before any cell is timed (a fresh Tollgate took ~20 s of calls one at a time to get there; BENCH_PROCESS_WARMUP_SECONDS). Each cell then has its own warm-up as above.`,
      'Bare Node proxy (bench/bare-proxy.ts): a reference, not a gateway — a node:http server that forwards the body to the mock with the request function of undici (the client Tollgate uses) and pipes the answer back, streams included; no auth, billing, parsing or logging. What a Node proxy forwarding with that client costs at the least on this machine.',
      `Tollgate: \`node src/cli.ts serve\` as in production: what \`npm start\` runs, the server bundle of \`npm run build\` (BENCH_SERVE_CODE=source serves from \`src\`); every call places a billing hold, checks the key's daily spending limit, settles, and writes a usage record — with request-rate limits off (RATE_LIMIT_KEY_RPM=0, RATE_LIMIT_APP_RPM=0), background timers off (SWEEP_INTERVAL_SECONDS=0), and the default LOG_LEVEL=info (one JSON line per request to standard output, a pipe this script reads; BENCH_LOG_LEVEL changes it). ${KEYS} users with 1,000,000 credits and one key each (made through the operator and dashboard APIs); requests take the keys in turn.`,
      `Large data set: ${SCALE.users.toLocaleString('en')} more users and ${SCALE.keys.toLocaleString('en')} more keys inserted with SQL into the same database (bench/seed.ts), then a fresh Tollgate process on it.`,
      `Portkey: @portkey-ai/gateway@${PORTKEY_VERSION} from the npm registry with @hono/node-server pinned to 1.14.1 (overrides), \`start-server.js --headless\`, provider openai with x-portkey-custom-host pointing at the mock. Its concurrency-64 non-streaming cell runs again right after each Tollgate instance's (the targets table judges against that figure; the figures table keeps Portkey's own row).`,
      'Peak RSS: VmHWM of the gateway process from /proc, over its whole life (start-up included).',
      `Agent loops (bench/agent-loop.ts): ${AGENT_LOOP_WORDS} (the repository's own docs and sources as text), answered by the same mock; meanwhile a bystander makes short calls one after another with its own key. Tollgate's run on an instance of their own after its other cells (the 10-key store), so their long bodies stay out of the judged peaks. CPU per agent call: the gateway process's CPU over the loops over the agents' calls (the bystander's included).`,
    ],
    scaleLabel: `${SCALE.keys.toLocaleString('en')} keys`,
    notes: QUICK
      ? ['BENCH_QUICK=1: short cells and a 10,000-key data set; a smoke run, not the figures to quote.']
      : [],
  };
  mkdirSync('.tmp/bench', { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify({ info, results, profiles, agentLoops }, null, 2)}\n`);
  writeReports(info, results, profiles, agentLoops);
  console.log(['', targetsTable(targets), '', ...proxyCeiling(results)].join('\n'));
}

/** The raw figures of the last run, kept so that the reports can be rendered again without measuring again. */
const RESULTS_FILE = '.tmp/bench/results.json';

/** Writes BENCHMARKS.md and the README's section from one run's figures. */
function writeReports(info: RunInfo, results: SystemResult[], profiles: string[], loops: AgentLoopRow[]): void {
  const targets = judgeTargets(results);
  const { command } = info;
  writeFileSync('BENCHMARKS.md', benchmarksMarkdown(info, results, targets, profiles, loops));
  updateReadme(
    'README.md',
    [
      `Measured by \`${command}\` on ${info.date} (${info.machine.slice(0, 3).join('; ')}). Mock upstream on loopback;`,
      'figures from one run; the full method, the machine and any profiles are in [BENCHMARKS.md](BENCHMARKS.md).',
      '',
      targetsTable(targets),
      '',
      ...proxyCeiling(results),
      figureTables(results),
      '',
      ...agentLoopSection(loops),
    ].join('\n'),
  );
  log(`wrote BENCHMARKS.md and the README's Benchmarks section`);
}

if (argument === '--render') {
  // `node bench/run.ts --render`: the reports again from .tmp/bench/results.json, nothing measured.
  const saved = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as {
    info: RunInfo;
    results: SystemResult[];
    profiles: string[];
    agentLoops?: AgentLoopRow[];
  };
  writeReports(saved.info, saved.results, saved.profiles, saved.agentLoops ?? []);
} else {
  try {
    await main();
  } finally {
    await cleanUp();
  }
}
log('done');
// Keep-alive sockets of the load tools must not hold the process open.
process.exit(0);
