import { Session } from 'node:inspector/promises';
import type { TestDatabase } from '../src/testing/harness.ts';
import { startBilledChat } from './billed-chat.ts';

/**
 * `node bench/allocations.ts [sqlite|postgres] [calls] [allocated|live|promoted] [json|stream]`: the bytes allocated per chat call
 * (non-streaming unless `stream`: then streamed, with usage asked for), from
 * V8's sampling heap profiler with collected objects included, grouped by the nearest frame of our code (or
 * the package, when none). Allocation is what the young-generation collector pays for (about a tenth of the
 * CPU under load) and what sets how often a call meets a scavenge (the concurrency-1 p99), and unlike time
 * it does not depend on how busy the machine is. The instance, its client and the mock upstream share this
 * process: the client's and the mock's bytes are in the total, under `node:internal/deps/undici` (fetch) and
 * the mock's frames.
 */

const [kind = 'sqlite', callsArg = '2000', mode = 'allocated', shape = 'json'] = process.argv.slice(2);
const CALLS = Number(callsArg);
/**
 * `live`: only what is still reachable when the calls end, per call — what a call leaves behind (a cache
 * entry, a timer, a closure kept alive), which the young generation promotes and the old one keeps.
 */
const LIVE = mode === 'live';
/**
 * `promoted`: only what outlived the young-generation collections (whether a full collection freed it later
 * or not), per call — what the scavenger copied and promoted, and the old generation then had to mark.
 */
const PROMOTED = mode === 'promoted';

const billed = await startBilledChat(kind as TestDatabase, { LOG_LEVEL: 'warn' });
const { close } = billed;
const chat = shape === 'stream' ? billed.stream : billed.chat;
try {
  for (let i = 0; i < 300; i++) await chat();

  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: !LIVE,
    includeObjectsCollectedByMinorGC: !LIVE && !PROMOTED,
  } as any);
  for (let i = 0; i < CALLS; i++) await chat();
  if (LIVE) await session.post('HeapProfiler.collectGarbage');
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as any;
  session.disconnect();

  type Frame = { functionName: string; url: string; lineNumber: number };
  const byOwner = new Map<string, number>();
  let total = 0;
  const walk = (node: { callFrame: Frame; selfSize: number; children: any[] }, stack: Frame[]) => {
    const frames = [...stack, node.callFrame];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const ours = frames.findLast((f) => f.url.includes('/src/') && !f.url.includes('/testing/'));
      const pkg = frames.findLast((f) => f.url.includes('node_modules'));
      const top = frames.at(-1)!;
      const owner = ours
        ? `${ours.functionName || '(anonymous)'} src/${ours.url.split('/src/')[1]}:${ours.lineNumber + 1}`
        : pkg
          ? pkg.url
              .replace(/^.*node_modules\//, '')
              .split('/')
              .slice(0, 2)
              .join('/')
          : `${top.functionName || '(anonymous)'} ${top.url}`;
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, frames);
  };
  walk(profile.head, []);
  const kb = (bytes: number) => (bytes / CALLS / 1024).toFixed(2).padStart(7);
  console.log(
    `${kind}: ${kb(total).trim()} KB ${LIVE ? 'still reachable after the calls' : PROMOTED ? 'promoted (outlived the young generation)' : 'allocated'} per call (${CALLS} calls; instance, client and mock)\n`,
  );
  for (const [owner, bytes] of [...byOwner].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`${kb(bytes)} KB  ${owner}`);
} finally {
  await close();
}
