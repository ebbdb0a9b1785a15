import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { quantile } from './load.ts';
import { installPortkey, portkeyTarget, startPortkey } from './portkey.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import {
  benchNodeFlags,
  createStore,
  provision,
  startTollgate,
  UPSTREAM_MODEL,
  verifyLedger,
  MODEL_ID,
} from './tollgate.ts';

/**
 * Paced streams, the workload an AI gateway carries (issue 18): many concurrent streams, each 64 deltas
 * 20 ms apart from the mock upstream, all open at once. Per system and number of streams: the added time
 * to first token (p50, against the direct path at the same size), the inter-chunk gap p99 and what the
 * gateway adds to it, the gateway's CPU per stream (its process's user+system time over the step), its
 * resident memory per open stream (RSS above the idle RSS after warm-up, over the streams open, when the most
 * are open), the most streams open at once (answer begun, not ended), and the
 * most streams held with a gap p99 within 2× the direct path's.
 *
 * `node bench/streams.ts [sizes] [systems]`, e.g. `node bench/streams.ts 250,500,1000 direct,bare,portkey,sqlite,postgres`
 * (`portkey`: the benchmark's baseline gateway, installed as `npm run bench` installs it).
 * Settings: BENCH_STREAM_DELTAS (64), BENCH_STREAM_GAP_MS (20), BENCH_STREAM_GENERATORS (2 load generator
 * threads), BENCH_NODE_FLAGS (Node flags for the proxies measured, e.g. a CPU profiler's). It writes nothing
 * but its output: one JSON line per cell and a Markdown table at the end, which judges the targets
 * (met / missed) and each gateway's peak RSS (VmHWM). The load generator shares the machine; on a small one
 * its own CPU (a column of its own) is part of what is measured, as it is for the direct path too.
 */

const DELTAS = Number(process.env.BENCH_STREAM_DELTAS ?? 64);
const GAP_MS = Number(process.env.BENCH_STREAM_GAP_MS ?? 20);
const [sizesArg = '250,500,1000', systemsArg = 'direct,bare,sqlite,postgres'] = process.argv.slice(2);
const SIZES = sizesArg.split(',').map(Number);
const SYSTEMS = systemsArg.split(',');
/** Load generator threads: each opens and times its share of the streams on an event loop of its own. */
const GENERATORS = Number(process.env.BENCH_STREAM_GENERATORS ?? 2);

interface Cell {
  system: string;
  streams: number;
  ok: number;
  ttftP50: number;
  gapP50: number;
  gapP99: number;
  cpuMsPerStream: number | null;
  rssKiBPerStream: number | null;
  /** The load generator's own CPU (all its threads) per stream: its share of the machine. */
  generatorCpuMsPerStream: number;
  failures: Record<string, number>;
  /** The most streams open at once (answer begun, not ended) in the generator's samples; 0 when not sampled. */
  mostOpen: number;
}

/** What one generator thread measured: every stream's time to first frame, and every gap between frames. */
interface Measured {
  ok: number;
  ttfts: number[];
  gaps: Float64Array;
  /** Why streams failed (an error code, or the HTTP status), and how many. */
  failures: Record<string, number>;
}

/** Streams of this generator thread whose answer began and has not ended yet. */
let openNow = 0;

/** One stream: time to the first `data:` frame and every gap between frames (pushed onto `gaps`). */
function openStream(
  target: URL,
  body: string,
  headers: Record<string, string>,
  agent: Agent,
  gaps: number[],
): Promise<{ ok: boolean; ttft: number; failure?: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    let last = 0;
    let ttft = NaN;
    let tail = '';
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        openNow++;
        res.once('close', () => openNow--);
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = performance.now();
          // Frames are counted, not chunks: a chunk carrying several frames shows the gateway held them back.
          const frames = (tail + chunk).split('\n\n');
          tail = frames.pop() ?? '';
          for (const frame of frames) {
            if (!frame.startsWith('data:')) continue;
            if (Number.isNaN(ttft)) ttft = now - started;
            else gaps.push(now - last);
            last = now;
          }
        });
        res.on('end', () => {
          const ok = (res.statusCode ?? 0) < 300 && !Number.isNaN(ttft);
          resolve({ ok, ttft, ...(ok ? {} : { failure: `HTTP ${res.statusCode}` }) });
        });
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, ttft, failure: error.code ?? 'error' }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, ttft, failure: error.code ?? 'error' }));
    req.setTimeout(120_000, () => req.destroy());
    req.end(body);
  });
}

/** The work of one generator thread: its share of a step's streams, opened in its share of each wave. */
interface GeneratorJob {
  url: string;
  body: string;
  /** The request headers, used in turn (one API key per user). */
  headers: Array<Record<string, string>>;
  /** This thread's index and the number of threads: it opens streams `index`, `index + threads`, … */
  index: number;
  threads: number;
  streams: number;
}

/** Runs in a generator thread: opens its streams in 10 ms waves (100 streams a wave over all threads). */
async function generate(job: GeneratorJob): Promise<Measured> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const target = new URL(job.url);
  const gaps: number[] = [];
  const running: Array<ReturnType<typeof openStream>> = [];
  for (let i = job.index, opened = 0; i < job.streams; i += job.threads, opened++) {
    running.push(openStream(target, job.body, job.headers[i % job.headers.length]!, agent, gaps));
    if (i % 100 >= 100 - job.threads) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const results = await Promise.all(running);
  agent.destroy();
  const ok = results.filter((r) => r.ok);
  const failures: Record<string, number> = {};
  for (const { failure } of results) if (failure) failures[failure] = (failures[failure] ?? 0) + 1;
  return { ok: ok.length, ttfts: ok.map((r) => r.ttft), gaps: Float64Array.from(gaps), failures };
}

if (!isMainThread) {
  parentPort!.once('message', (job: GeneratorJob) => {
    // How many streams are open, for the resident memory per open stream (see `step`).
    const reporter = setInterval(() => parentPort!.postMessage({ open: openNow }), 25);
    void generate(job).then((measured) => {
      clearInterval(reporter);
      parentPort!.postMessage(measured);
    });
  });
}

/**
 * Opens a step's streams from `GENERATORS` threads at once, so that no one event loop reading thousands of
 * sockets delays the frames it times; resolves with everything they measured and their CPU time.
 */
async function runGenerators(
  job: Omit<GeneratorJob, 'index' | 'threads'>,
  openByThread: number[],
): Promise<Measured & { cpuMs: number }> {
  const cpuBefore = process.cpuUsage();
  const parts = await Promise.all(
    Array.from(
      { length: GENERATORS },
      (_, index) =>
        new Promise<Measured>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url));
          worker.on('message', (message: Measured | { open: number }) => {
            if ('open' in message) {
              openByThread[index] = message.open;
              return;
            }
            openByThread[index] = 0;
            resolve(message);
            void worker.terminate();
          });
          worker.once('error', reject);
          worker.postMessage({ ...job, index, threads: GENERATORS } satisfies GeneratorJob);
        }),
    ),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const gaps = new Float64Array(parts.reduce((sum, part) => sum + part.gaps.length, 0));
  let at = 0;
  for (const part of parts) {
    gaps.set(part.gaps, at);
    at += part.gaps.length;
  }
  return {
    ok: parts.reduce((sum, part) => sum + part.ok, 0),
    ttfts: parts.flatMap((part) => part.ttfts),
    gaps,
    failures: parts.reduce<Record<string, number>>((all, part) => {
      for (const [why, count] of Object.entries(part.failures)) all[why] = (all[why] ?? 0) + count;
      return all;
    }, {}),
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

/** User + system CPU of a process so far, in ms (Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function rssKiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

/** Opens `streams` streams at once (in 10 ms waves of 100, as clients arrive) and waits for all of them. */
async function step(
  system: string,
  streams: number,
  url: string,
  model: string,
  headers: Array<Record<string, string>>,
  pid: number | null,
  idleRssKiB: number,
): Promise<Cell> {
  const body = JSON.stringify({ ...CHAT_BODY, model, stream: true, stream_options: { include_usage: true } });
  const cpuBefore = pid ? cpuMs(pid) : 0;
  // Resident memory per open stream: the RSS above the idle instance's, over the streams open, at the sample
  // with the most streams open (what the process grew by for any reason, young generation and code included).
  const openByThread = Array.from({ length: GENERATORS }, () => 0);
  let perStream = 0;
  let mostOpen = 0;
  const sampler = pid
    ? setInterval(() => {
        const open = openByThread.reduce((sum, n) => sum + n, 0);
        if (open <= mostOpen) return;
        mostOpen = open;
        perStream = (rssKiB(pid) - idleRssKiB) / open;
      }, 50)
    : null;
  const measured = await runGenerators({ url, body, headers, streams }, openByThread);
  if (sampler) clearInterval(sampler);
  const ttfts = measured.ttfts.sort((a, b) => a - b);
  const gaps = measured.gaps.sort();
  const at = (q: number) =>
    gaps.length ? gaps[Math.min(gaps.length - 1, Math.max(0, Math.ceil(q * gaps.length) - 1))]! : NaN;
  return {
    system,
    streams,
    ok: measured.ok,
    ttftP50: quantile(ttfts, 0.5),
    gapP50: at(0.5),
    gapP99: at(0.99),
    cpuMsPerStream: pid ? (cpuMs(pid) - cpuBefore) / streams : null,
    rssKiBPerStream: pid ? perStream : null,
    mostOpen,
    generatorCpuMsPerStream: measured.cpuMs / streams,
    failures: measured.failures,
  };
}

/** Every system named, one after the other, each through every size; returns the cells and each gateway's peak RSS. */
async function main(): Promise<void> {
  const children: Child[] = [];
  const cells: Cell[] = [];
  const peakRss = new Map<string, number>();
  try {
    const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], {
      cwd: process.cwd(),
      env: { BENCH_UPSTREAM_WORDS: String(DELTAS), BENCH_UPSTREAM_CHUNK_DELAY_MS: String(GAP_MS) },
    });
    children.push(mock);
    const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
    const direct = [{ authorization: 'Bearer x' }];
    for (const system of SYSTEMS) {
      let target: {
        url: string;
        model: string;
        headers: Array<Record<string, string>>;
        pid: number | null;
        done: () => Promise<void>;
      };
      if (system === 'direct') {
        target = {
          url: `${upstreamUrl}/v1/chat/completions`,
          model: UPSTREAM_MODEL,
          headers: direct,
          pid: null,
          done: async () => {},
        };
      } else if (system === 'bare') {
        const bare = spawnNode('bare-proxy', [...benchNodeFlags(), 'bench/bare-proxy.ts', upstreamUrl], {
          cwd: process.cwd(),
        });
        children.push(bare);
        const { url } = await firstJsonLine<{ url: string }>(bare);
        target = {
          url: `${url}/v1/chat/completions`,
          model: UPSTREAM_MODEL,
          headers: direct,
          pid: bare.pid,
          done: async () => {
            peakRss.set(system, bare.peakRssMiB());
            await bare.stop();
          },
        };
      } else if (system === 'portkey') {
        installPortkey();
        const portkey = await startPortkey();
        children.push(portkey.child);
        const portkeyChat = portkeyTarget(portkey.baseUrl, upstreamUrl, {});
        target = {
          url: portkeyChat.url,
          model: UPSTREAM_MODEL,
          headers: [portkeyChat.headers()],
          pid: portkey.child.pid,
          done: async () => {
            peakRss.set(system, portkey.child.peakRssMiB());
            await portkey.child.stop();
          },
        };
      } else if (system === 'sqlite' || system === 'postgres') {
        const { store, dispose } = await createStore(system);
        const instance = await startTollgate(store, upstreamUrl);
        children.push(instance.child);
        const keys = (await provision(instance, 10)).map((key) => ({ authorization: `Bearer ${key}` }));
        target = {
          url: `${instance.baseUrl}/api/v1/chat/completions`,
          model: MODEL_ID,
          headers: keys,
          pid: instance.child.pid,
          done: async () => {
            const ledger = await verifyLedger(instance);
            peakRss.set(system, instance.child.peakRssMiB());
            console.error(
              `[streams] Tollgate on ${system}: ledger ${ledger.ok ? 'verifies' : 'FAILS'} (${ledger.detail}); peak RSS ${instance.child.peakRssMiB().toFixed(0)} MiB`,
            );
            await instance.child.stop();
            await dispose();
          },
        };
      } else throw new Error(`unknown system ${system}: direct, bare, portkey, sqlite or postgres`);
      try {
        await step(system, 20, target.url, target.model, target.headers, null, 0); // warm-up
        const idle = target.pid ? rssKiB(target.pid) : 0;
        for (const size of SIZES) {
          const cell = await step(system, size, target.url, target.model, target.headers, target.pid, idle);
          cells.push(cell);
          console.log(JSON.stringify(cell));
        }
      } finally {
        await target.done();
      }
    }
  } finally {
    for (const child of children) await child.stop(3_000);
  }
  printTables(cells, peakRss);
}

/** The targets (issue 18): at 5,000 streams, ≤ 5 ms added gap p99 and ≤ 20 KB per open stream; peak RSS < 200 MB. */
const TARGET_STREAMS = 5_000;
const TARGET_ADDED_GAP_P99_MS = 5;
const TARGET_BYTES_PER_STREAM = 20_000;
const TARGET_PEAK_RSS_MB = 200;

function printTables(cells: Cell[], peakRss: Map<string, number>): void {
  const directAt = (streams: number) => cells.find((c) => c.system === 'direct' && c.streams === streams);
  const f = (n: number | null | undefined, digits = 2) =>
    n === null || n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits);
  const verdict = (met: boolean | null) => (met === null ? '' : met ? ' met' : ' **missed**');
  console.log(
    `\nPaced streams: ${DELTAS} deltas ${GAP_MS} ms apart, all streams open at once; ${GENERATORS} generator threads.`,
  );
  console.log(
    `Targets (issue 18, at ${TARGET_STREAMS.toLocaleString('en')} streams): added gap p99 ≤ ${TARGET_ADDED_GAP_P99_MS} ms, ≤ ${TARGET_BYTES_PER_STREAM / 1000} KB resident per open stream; peak RSS < ${TARGET_PEAK_RSS_MB} MB.\n`,
  );
  console.log(
    '| System | Streams | OK | TTFT p50 ms (added) | Gap p50 ms | Gap p99 ms (added) | CPU ms per stream | Most open | KB per open stream | Generator CPU ms per stream |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of cells) {
    const d = directAt(c.streams);
    const gateway = c.system !== 'direct';
    const added = (value: number, base: number | undefined) =>
      base === undefined || !gateway ? '' : ` (${value - base >= 0 ? '+' : ''}${f(value - base)})`;
    const judged = gateway && c.streams >= TARGET_STREAMS;
    // An added gap is judged only against a direct path that kept the upstream's pace: when the generator and
    // the mock themselves lag (the direct path's gap p99 above twice the pacing), a difference means nothing.
    const gapJudged = judged && d !== undefined && d.gapP99 <= 2 * GAP_MS;
    const gapMet = gapJudged ? c.gapP99 - d.gapP99 <= TARGET_ADDED_GAP_P99_MS : null;
    const kb = c.rssKiBPerStream === null ? null : (c.rssKiBPerStream * 1024) / 1000;
    const kbMet = judged && kb !== null ? kb <= TARGET_BYTES_PER_STREAM / 1000 : null;
    console.log(
      `| ${c.system} | ${c.streams} | ${c.ok} | ${f(c.ttftP50)}${added(c.ttftP50, d?.ttftP50)} | ${f(c.gapP50)} | ${f(c.gapP99)}${added(c.gapP99, d?.gapP99)}${judged && !gapJudged ? ' not judged' : verdict(gapMet)} | ${f(c.cpuMsPerStream)} | ${c.mostOpen || '–'} | ${f(kb, 1)}${verdict(kbMet)} | ${f(c.generatorCpuMsPerStream)} |`,
    );
  }
  console.log('');
  if (cells.some((c) => c.system === 'direct' && c.streams >= TARGET_STREAMS && c.gapP99 > 2 * GAP_MS))
    console.log(
      `- The added gap p99 is not judged where the direct path's own gap p99 exceeded ${2 * GAP_MS} ms (twice the pacing): the generator or the mock lagged, and the difference is noise.`,
    );
  for (const c of cells.filter((cell) => Object.keys(cell.failures).length > 0))
    console.log(`- ${c.system} at ${c.streams}: failed streams ${JSON.stringify(c.failures)}`);
  for (const system of SYSTEMS.filter((s) => s !== 'direct')) {
    const held = cells
      .filter(
        (c) =>
          c.system === system &&
          c.ok === c.streams &&
          directAt(c.streams) &&
          c.gapP99 <= 2 * directAt(c.streams)!.gapP99,
      )
      .map((c) => c.streams);
    const peak = peakRss.get(system);
    const peakMb = peak === undefined ? undefined : (peak * 1024 * 1024) / 1e6;
    console.log(
      `- ${system}: most streams held with gap p99 within 2× the direct path's: ${held.length ? Math.max(...held) : 'none of the sizes tried'}; peak RSS ${f(peak, 0)} MiB (${f(peakMb, 0)} MB)${peakMb === undefined || system === 'bare' || system === 'portkey' ? '' : verdict(peakMb < TARGET_PEAK_RSS_MB)}`,
    );
  }
}

if (isMainThread) await main();
