import { readFileSync } from 'node:fs';
import { hammer, type Target } from './load.ts';
import { firstJsonLine, spawnNode } from './processes.ts';
import { CHAT_BODY } from './profile.ts';
import { seedScale } from './seed.ts';
import { createStore, messagesTarget, provision, responsesTarget, startTollgate, tollgateTarget } from './tollgate.ts';

/**
 * `node bench/memory.ts [sqlite|postgres] [node flags…]`: where a Tollgate instance's resident memory is. One
 * instance (with `serve`'s runtime settings, and any V8 flags given, which replace the same flag of those
 * settings) goes through the concurrency-64 cells that set the benchmark's peak (non-streaming chat,
 * streaming chat, streaming Responses); after each, its peak (VmHWM) and current RSS; at the end, the
 * resident memory by kind (/proc/<pid>/smaps): the node binary's pages (file-backed, shared with every
 * Node process on the machine), malloc's heap, and the other anonymous memory (V8's heap, code and stacks).
 */

const [dialect = 'sqlite', ...flags] = process.argv.slice(2);
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('database: sqlite or postgres');

const MiB = (kib: number) => Math.round(kib / 1024);

/** Resident KiB by kind of mapping, from /proc/<pid>/smaps. */
function residentByKind(pid: number): Record<string, number> {
  const kinds: Record<string, number> = {};
  let kind = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      const path = mapping[1];
      kind =
        path === '[heap]'
          ? 'malloc heap ([heap])'
          : path.endsWith('-shm')
            ? "SQLite's WAL index (-shm, shared)"
            : path.endsWith('/bin/node')
              ? 'node binary (file-backed)'
              : path.startsWith('/')
                ? 'other files (libraries, database)'
                : 'other anonymous (V8 heap and code, mmapped malloc, stacks)';
      continue;
    }
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (rss) kinds[kind] = (kinds[kind] ?? 0) + Number(rss[1]);
  }
  return kinds;
}

/** Prints the process's resident memory by kind, the largest first. */
function printResident(pid: number): void {
  for (const [kind, kib] of Object.entries(residentByKind(pid)).sort((a, b) => b[1] - a[1]))
    console.log(`  ${String(MiB(kib)).padStart(4)} MiB  ${kind}`);
}

const { store, dispose } = await createStore(dialect);
const mock = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
try {
  const { url } = await firstJsonLine<{ url: string }>(mock);
  // BENCH_MEMORY_SCALE=large: the instance runs on `npm run bench`'s large data set (100,000 more users and
  // 1,000,000 more keys), the store whose peak is the highest in that run; seeded into the schema a first
  // instance migrated, then measured on a fresh process as `npm run bench` does.
  if (process.env.BENCH_MEMORY_SCALE === 'large') {
    await (await startTollgate(store, url, flags)).child.stop(15_000);
    await seedScale(store, 100_000, 1_000_000);
  }
  const instance = await startTollgate(store, url, flags);
  try {
    const status = (field: string) =>
      Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${instance.child.pid}/status`, 'utf8'))![1]);
    const keys = await provision(instance, 10);
    console.log(`started, provisioned: RSS ${MiB(status('VmRSS'))} MiB`);
    // BENCH_MEMORY_CELLS=all: every concurrency-64 cell `npm run bench` runs on one instance, in its order;
    // else the three that set its peak.
    const all = process.env.BENCH_MEMORY_CELLS === 'all';
    const cells: Array<readonly [string, Target, boolean]> = [
      ['chat, non-streaming', tollgateTarget(instance, keys, CHAT_BODY), false],
      ['chat, streaming', tollgateTarget(instance, keys, CHAT_BODY), true],
      ...(all ? [['Responses, non-streaming', responsesTarget(instance, keys, CHAT_BODY), false] as const] : []),
      ['Responses, streaming', responsesTarget(instance, keys, CHAT_BODY), true],
      ...(all
        ? ([
            ['Messages, non-streaming', messagesTarget(instance, keys, CHAT_BODY), false],
            ['Messages, streaming', messagesTarget(instance, keys, CHAT_BODY), true],
          ] as const)
        : []),
    ];
    for (const [name, target, stream] of cells) {
      const cell = await hammer(target, { stream, connections: 64, seconds: 4, warmupSeconds: 1 });
      console.log(
        `${name}, c=64: ${Math.round(cell.rps)} req/s; peak ${MiB(status('VmHWM'))} MiB, now ${MiB(status('VmRSS'))} MiB`,
      );
      if (all) printResident(instance.child.pid);
    }
    printResident(instance.child.pid);
  } finally {
    await instance.child.stop(15_000);
  }
} finally {
  await mock.stop();
  await dispose();
}
