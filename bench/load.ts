import { Agent, request as httpRequest } from 'node:http';
import autocannon from 'autocannon';
import type { CpuPerCall } from './cpu.ts';

/**
 * The two load tools of the benchmark.
 *
 * - `hammer` drives concurrency 64 with autocannon. Its latency histogram has a resolution of 1 ms, which
 *   is fine for figures of tens of ms but too coarse for the 1 ms added-latency target.
 * - `probe` is a small node:http client that times every request with `performance.now()` (µs resolution)
 *   and, for streams, the first `data:` frame: it runs the concurrency-1 cells and the time-to-first-token
 *   figures.
 */

/** A target of the load: where to send the chat request and which headers to send with it. */
export interface Target {
  /** Absolute URL of the chat-completions endpoint. */
  url: string;
  /** The request body without `stream` (added per cell). */
  body: Record<string, unknown>;
  /** Headers of the next request; called for every request (Tollgate rotates its API keys here). */
  headers: () => Record<string, string>;
  /** The fields a streamed request adds to `body` (default: OpenAI chat's `stream` and `stream_options.include_usage`). */
  streamFields?: Record<string, unknown>;
}

/** The figures of one cell. */
export interface CellResult {
  /** Completed 2xx requests per second. */
  rps: number;
  /** Total latency of a request (a stream: until its last byte), ms. */
  p50: number;
  p99: number;
  /** Time to the first `data:` frame of a stream, ms (probe cells only). */
  ttftP50?: number;
  ttftP99?: number;
  /** Requests that failed: connection errors, timeouts and non-2xx answers. */
  failed: number;
  total: number;
  /** CPU time per call, by process and thread, when the cell was asked to measure it (bench/cpu.ts). */
  cpu?: CpuPerCall;
  /** Every completed request's total latency, ms, in the order they completed (probe cells asked to keep them). */
  totals?: number[];
}

/** How a cell runs. */
export interface CellOptions {
  stream: boolean;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  /** Called once the warm-up is over; what it returns is called with the calls of the measured part. */
  onMeasure?: () => (calls: number) => CpuPerCall;
  /** Return every request's latency too (probe only; see {@link CellResult.totals}). */
  keepTimings?: boolean;
}

const bodyOf = (target: Target, stream: boolean) =>
  JSON.stringify({
    ...target.body,
    ...(stream ? (target.streamFields ?? { stream: true, stream_options: { include_usage: true } }) : {}),
  });

/** Runs autocannon against `target` for `seconds`, after `warmupSeconds` of the same load whose figures are dropped. */
export async function hammer(target: Target, options: CellOptions): Promise<CellResult> {
  const body = bodyOf(target, options.stream);
  const run = (duration: number) =>
    autocannon({
      url: target.url,
      connections: options.connections,
      duration,
      timeout: 30,
      requests: [
        {
          method: 'POST',
          body,
          setupRequest: (request) => ({
            ...request,
            headers: { 'content-type': 'application/json', ...target.headers() },
          }),
        },
      ],
    });
  if (options.warmupSeconds > 0) await run(options.warmupSeconds);
  const measured = options.onMeasure?.();
  const result = await run(options.seconds);
  const total = result['2xx'] + result.errors + result.timeouts + result.non2xx;
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.errors + result.timeouts + result.non2xx,
    total,
    ...(measured ? { cpu: measured(total) } : {}),
  };
}

/** The timing of one request. */
interface Timing {
  ok: boolean;
  totalMs: number;
  /** Time to the first `data:` frame (streams only). */
  firstFrameMs?: number;
}

/** Sends one request over `agent`, timing it with µs resolution. */
function timedRequest(target: Target, body: string, agent: Agent): Promise<Timing> {
  return new Promise((resolve) => {
    const url = new URL(target.url);
    const started = performance.now();
    let firstFrameMs: number | undefined;
    let seen = '';
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...target.headers() },
      },
      (res) => {
        res.on('data', (chunk: Buffer) => {
          if (firstFrameMs !== undefined) return;
          seen += chunk.toString();
          if (seen.includes('data:')) firstFrameMs = performance.now() - started;
        });
        res.on('end', () =>
          resolve({ ok: (res.statusCode ?? 0) < 300, totalMs: performance.now() - started, firstFrameMs }),
        );
        res.on('error', () => resolve({ ok: false, totalMs: performance.now() - started }));
      },
    );
    req.on('error', () => resolve({ ok: false, totalMs: performance.now() - started }));
    req.setTimeout(30_000, () => req.destroy());
    req.end(body);
  });
}

/** The `q` quantile of sorted numbers (nearest rank). */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The median of `values` (the lower middle one of an even count), which stay as they were. */
export function median(values: number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

/**
 * Calls one at a time for `seconds`, unmeasured: a fresh process's warm-up, so that V8 has optimised its
 * per-call code before a cell is timed (bench/run.ts, PROCESS_WARMUP, says why).
 */
export async function warmUp(target: Target, seconds: number): Promise<void> {
  if (seconds > 0) await probe(target, { stream: false, connections: 1, seconds, warmupSeconds: 0 });
}

/**
 * Runs `connections` loops that each send requests back to back over keep-alive connections for `seconds`
 * (after `warmupSeconds` whose timings are dropped), timing each request and each stream's first frame.
 */
export async function probe(target: Target, options: CellOptions): Promise<CellResult> {
  const body = bodyOf(target, options.stream);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const run = async (seconds: number) => {
    const timings: Timing[] = [];
    const started = performance.now();
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (performance.now() < deadline) timings.push(await timedRequest(target, body, agent));
      }),
    );
    return { timings, elapsedS: (performance.now() - started) / 1000 };
  };
  try {
    if (options.warmupSeconds > 0) await run(options.warmupSeconds);
    const measured = options.onMeasure?.();
    const { timings, elapsedS } = await run(options.seconds);
    const ok = timings.filter((t) => t.ok);
    const totals = ok.map((t) => t.totalMs).sort((a, b) => a - b);
    const frames = ok.flatMap((t) => (t.firstFrameMs === undefined ? [] : [t.firstFrameMs])).sort((a, b) => a - b);
    return {
      rps: ok.length / elapsedS,
      p50: quantile(totals, 0.5),
      p99: quantile(totals, 0.99),
      ...(options.stream ? { ttftP50: quantile(frames, 0.5), ttftP99: quantile(frames, 0.99) } : {}),
      failed: timings.length - ok.length,
      total: timings.length,
      ...(measured ? { cpu: measured(timings.length) } : {}),
      ...(options.keepTimings ? { totals: ok.map((t) => t.totalMs) } : {}),
    };
  } finally {
    agent.destroy();
  }
}
