import { startMockUpstream } from '../src/providers/testing/mock-upstream.ts';

/**
 * The benchmark's upstream as a process of its own, so that its CPU is not charged to the load generator or
 * to the gateway under test. It is the tests' mock (OpenAI-compatible JSON and SSE, `/v1/models`) with the
 * request log off. Prints `{"url": …}` on one line once it listens; stops on SIGTERM.
 *
 * Settings: BENCH_UPSTREAM_LATENCY_MS (delay before each answer), BENCH_UPSTREAM_CHUNK_DELAY_MS (between
 * stream chunks), BENCH_UPSTREAM_WORDS (stream chunks of content per answer).
 */
const words = Number(process.env.BENCH_UPSTREAM_WORDS ?? 16);
const mock = await startMockUpstream({
  log: false,
  latencyMs: Number(process.env.BENCH_UPSTREAM_LATENCY_MS ?? 0),
  chunkDelayMs: Number(process.env.BENCH_UPSTREAM_CHUNK_DELAY_MS ?? 0),
  reply: Array.from({ length: words }, (_, i) => `word${i}`).join(' '),
});
process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
process.on('SIGTERM', () => void mock.close().then(() => process.exit(0)));
