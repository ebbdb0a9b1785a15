import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { quantile } from './load.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import { createStore, provision, startTollgate, UPSTREAM_MODEL, verifyLedger, MODEL_ID } from './tollgate.ts';

/**
 * Paced streams, the workload an AI gateway carries (issue 18): many concurrent streams, each 64 deltas
 * 20 ms apart from the mock upstream, all open at once. Per system and number of streams: the added time
 * to first token (p50, against the direct path at the same size), the inter-chunk gap p99 and what the
 * gateway adds to it, the gateway's CPU per stream (its process's user+system time over the step), its
 * resident memory per open stream (peak RSS during the step minus RSS before it, over the streams), and the
 * most streams held with a gap p99 within 2× the direct path's.
 *
 * `node bench/streams.ts [sizes] [systems]`, e.g. `node bench/streams.ts 250,500,1000 direct,bare,sqlite,postgres`.
 * Settings: BENCH_STREAM_DELTAS (64), BENCH_STREAM_GAP_MS (20). It writes nothing but its output: one JSON
 * line per cell and a Markdown table at the end. The load generator shares the machine; on a small one its
 * own CPU is part of what is measured, as it is for the direct path too.
 */

const DELTAS = Number(process.env.BENCH_STREAM_DELTAS ?? 64);
const GAP_MS = Number(process.env.BENCH_STREAM_GAP_MS ?? 20);
const [sizesArg = '250,500,1000', systemsArg = 'direct,bare,sqlite,postgres'] = process.argv.slice(2);
const SIZES = sizesArg.split(',').map(Number);
const SYSTEMS = systemsArg.split(',');

interface Cell {
  system: string;
  streams: number;
  ok: number;
  ttftP50: number;
  gapP50: number;
  gapP99: number;
  cpuMsPerStream: number | null;
  rssKiBPerStream: number | null;
}

/** One stream: time to the first `data:` frame and every gap between frames. */
function openStream(
  url: string,
  body: string,
  headers: Record<string, string>,
  agent: Agent,
): Promise<{ ok: boolean; ttft: number; gaps: number[] }> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const started = performance.now();
    let last = 0;
    let ttft = NaN;
    const gaps: number[] = [];
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
        res.on('end', () => resolve({ ok: (res.statusCode ?? 0) < 300 && !Number.isNaN(ttft), ttft, gaps }));
        res.on('error', () => resolve({ ok: false, ttft, gaps }));
      },
    );
    req.on('error', () => resolve({ ok: false, ttft, gaps }));
    req.setTimeout(60_000, () => req.destroy());
    req.end(body);
  });
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
  headers: () => Record<string, string>,
  pid: number | null,
): Promise<Cell> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const body = JSON.stringify({ ...CHAT_BODY, model, stream: true, stream_options: { include_usage: true } });
  const cpuBefore = pid ? cpuMs(pid) : 0;
  const rssBefore = pid ? rssKiB(pid) : 0;
  let rssPeak = rssBefore;
  const sampler = pid ? setInterval(() => (rssPeak = Math.max(rssPeak, rssKiB(pid))), 50) : null;
  const running: Array<ReturnType<typeof openStream>> = [];
  for (let i = 0; i < streams; i++) {
    running.push(openStream(url, body, headers(), agent));
    if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const results = await Promise.all(running);
  if (sampler) clearInterval(sampler);
  agent.destroy();
  const ok = results.filter((r) => r.ok);
  const ttfts = ok.map((r) => r.ttft).sort((a, b) => a - b);
  const gaps = ok.flatMap((r) => r.gaps).sort((a, b) => a - b);
  return {
    system,
    streams,
    ok: ok.length,
    ttftP50: quantile(ttfts, 0.5),
    gapP50: quantile(gaps, 0.5),
    gapP99: quantile(gaps, 0.99),
    cpuMsPerStream: pid ? (cpuMs(pid) - cpuBefore) / streams : null,
    rssKiBPerStream: pid ? (rssPeak - rssBefore) / streams : null,
  };
}

const children: Child[] = [];
const cells: Cell[] = [];
try {
  const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], {
    cwd: process.cwd(),
    env: { BENCH_UPSTREAM_WORDS: String(DELTAS), BENCH_UPSTREAM_CHUNK_DELAY_MS: String(GAP_MS) },
  });
  children.push(mock);
  const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
  const direct = { authorization: 'Bearer x' };
  for (const system of SYSTEMS) {
    let target: {
      url: string;
      model: string;
      headers: () => Record<string, string>;
      pid: number | null;
      done: () => Promise<void>;
    };
    if (system === 'direct') {
      target = {
        url: `${upstreamUrl}/v1/chat/completions`,
        model: UPSTREAM_MODEL,
        headers: () => direct,
        pid: null,
        done: async () => {},
      };
    } else if (system === 'bare') {
      const bare = spawnNode('bare-proxy', ['bench/bare-proxy.ts', upstreamUrl], { cwd: process.cwd() });
      children.push(bare);
      const { url } = await firstJsonLine<{ url: string }>(bare);
      target = {
        url: `${url}/v1/chat/completions`,
        model: UPSTREAM_MODEL,
        headers: () => direct,
        pid: bare.pid,
        done: () => bare.stop(),
      };
    } else if (system === 'sqlite' || system === 'postgres') {
      const { store, dispose } = await createStore(system);
      const instance = await startTollgate(store, upstreamUrl);
      children.push(instance.child);
      const keys = (await provision(instance, 10)).map((key) => ({ authorization: `Bearer ${key}` }));
      let next = 0;
      target = {
        url: `${instance.baseUrl}/api/v1/chat/completions`,
        model: MODEL_ID,
        headers: () => keys[next++ % keys.length]!,
        pid: instance.child.pid,
        done: async () => {
          const ledger = await verifyLedger(instance);
          console.error(
            `[streams] Tollgate on ${system}: ledger ${ledger.ok ? 'verifies' : 'FAILS'} (${ledger.detail}); peak RSS ${instance.child.peakRssMiB().toFixed(0)} MiB`,
          );
          await instance.child.stop();
          await dispose();
        },
      };
    } else throw new Error(`unknown system ${system}: direct, bare, sqlite or postgres`);
    try {
      await step(system, 20, target.url, target.model, target.headers, null); // warm-up
      for (const size of SIZES) {
        const cell = await step(system, size, target.url, target.model, target.headers, target.pid);
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

const directAt = (streams: number) => cells.find((c) => c.system === 'direct' && c.streams === streams);
const f = (n: number | null, digits = 2) => (n === null || Number.isNaN(n) ? '–' : n.toFixed(digits));
console.log(`\nPaced streams: ${DELTAS} deltas ${GAP_MS} ms apart, all streams open at once.\n`);
console.log(
  '| System | Streams | OK | TTFT p50 ms (added) | Gap p50 ms | Gap p99 ms (added) | CPU ms per stream | RSS KiB per open stream |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const c of cells) {
  const d = directAt(c.streams);
  const added = (value: number, base: number | undefined) =>
    base === undefined || c.system === 'direct' ? '' : ` (${value - base >= 0 ? '+' : ''}${f(value - base)})`;
  console.log(
    `| ${c.system} | ${c.streams} | ${c.ok} | ${f(c.ttftP50)}${added(c.ttftP50, d?.ttftP50)} | ${f(c.gapP50)} | ${f(c.gapP99)}${added(c.gapP99, d?.gapP99)} | ${f(c.cpuMsPerStream)} | ${f(c.rssKiBPerStream, 1)} |`,
  );
}
for (const system of SYSTEMS.filter((s) => s !== 'direct')) {
  const held = cells
    .filter(
      (c) =>
        c.system === system && c.ok === c.streams && directAt(c.streams) && c.gapP99 <= 2 * directAt(c.streams)!.gapP99,
    )
    .map((c) => c.streams);
  console.log(
    `${system}: most streams held with gap p99 within 2× the direct path's: ${held.length ? Math.max(...held) : 'none of the sizes tried'}`,
  );
}
