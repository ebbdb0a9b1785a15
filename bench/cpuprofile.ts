import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/**
 * Reads a V8 `.cpuprofile` (what `node --cpu-prof` writes) into the views that find a hot spot fastest: the
 * functions with the most self time, self time summed per source file or package, our functions by inclusive
 * time, and the time of each layer of a call (see {@link LAYERS}).
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** One line of a summary: a function or a file, its self time in ms and its share of all samples. */
export interface HotSpot {
  name: string;
  selfMs: number;
  percent: number;
}

/** The top self-time functions and files of a profile. */
export interface ProfileSummary {
  totalMs: number;
  functions: HotSpot[];
  files: HotSpot[];
  /** Our own functions (under `src/`) by inclusive time: each sample counts once for every function on its stack. */
  inclusive: HotSpot[];
  /** Every sample's time by the layer of a call it was spent in ({@link LAYERS}), idle included. */
  layers: HotSpot[];
  /** The calls completed in the profile's window, when known: the layers are then also given in µs per call. */
  calls?: number;
}

/** Which samples to summarise, and what to divide by. */
export interface SummaryOptions {
  /**
   * Only the samples taken in this window, in µs of the monotonic clock (`process.hrtime.bigint() / 1000n` in
   * any process of the machine: V8's profile timestamps use the same clock), e.g. a measured cell's, so that
   * start-up and warm-up stay out of the figures.
   */
  window?: { fromMicros: number; toMicros: number };
  /** Calls completed in that window. */
  calls?: number;
}

/**
 * The layers of a gateway call, each by the code it runs: a sample counts for the layer of the deepest frame on
 * its stack that belongs to one (a socket write counts for the code that made it), so that the whole profile
 * adds up by layer. Checked in order; the first that matches a frame's source wins.
 */
export const LAYERS: ReadonlyArray<readonly [layer: string, source: RegExp]> = [
  ['SQLite: statements, commits, the driver (and Kysely)', /src\/platform\/db\/|node_modules\/kysely\//],
  ['billing: holds, ledger, limits (our logic)', /src\/billing\//],
  ['token counting', /src\/providers\/tokens|src\/gateway\/prompt-counts|src\/gateway\/count-guard/],
  ['PostgreSQL client (pg)', /node_modules\/(pg|pg-protocol|pg-pool|pg-types)\//],
  ['request log (pino)', /node_modules\/(pino|sonic-boom|@pinojs|fast-redact)|src\/platform\/logger/],
  ['metrics (prom-client)', /node_modules\/prom-client|src\/gateway\/metrics|src\/platform\/metrics/],
  ['body validation (ajv)', /node_modules\/(ajv|fast-uri)\//],
  ['response serialisation (fast-json-stringify)', /node_modules\/fast-json-stringify\//],
  ['upstream client (undici)', /node_modules\/undici\/|src\/providers\/http\.ts/],
  ['credential check (keys, principal)', /src\/keys\/|src\/platform\/http\/principal|src\/platform\/crypto/],
  ['gateway, protocols and providers (our logic)', /src\/(gateway|providers|protocols|models)\//],
  ['Fastify and its plugins', /node_modules\/(fastify|@fastify|find-my-way|avvio|secure-json-parse|cookie)\//],
  ['our HTTP platform (hooks)', /src\/platform\/http\//],
  ['node:http, net and streams', /^node:(_http|net|stream|events)|^node:internal\/(streams|http|stream_base)/],
];

/** A frame's source: a file path for a `file://` URL, the URL itself otherwise (`node:…`, `wasm://…`). */
const sourceOf = (url: string) => (url.startsWith('file://') ? new URL(url).pathname : url);

/** Where a frame's code lives, short: `src/gateway/chat.ts`, `node_modules/kysely`, `node:internal/…`, or a V8 pseudo-frame. */
function placeOf(url: string): string {
  if (!url) return '(native/V8)';
  const path = sourceOf(url);
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = path.slice(modules + '/node_modules/'.length).split('/');
    return `node_modules/${parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  return path.startsWith('/') ? relative(process.cwd(), path) : path;
}

/** Summarises the profile at `file`: the `top` functions and files by self time, and the layers. */
export function summariseCpuProfile(file: string, top = 15, options: SummaryOptions = {}): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (options.window && (at < options.window.fromMicros || at > options.window.toMicros)) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const functions = new Map<string, number>();
  const files = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const place = placeOf(url);
    const name = url ? `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}` : functionName;
    functions.set(name, (functions.get(name) ?? 0) + us);
    files.set(
      place === '(native/V8)' ? functionName : place,
      (files.get(place === '(native/V8)' ? functionName : place) ?? 0) + us,
    );
  }
  // Inclusive time of our own code: walk the call tree, counting a sample once per distinct function on its stack.
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const names = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      const place = placeOf(url);
      if (place.startsWith('src/')) names.add(`${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`);
    }
    for (const name of names) inclusive.set(name, (inclusive.get(name) ?? 0) + us);
  }
  const layerOf = layerFinder(byId, parent);
  const layers = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const layer = layerOf(id);
    layers.set(layer, (layers.get(layer) ?? 0) + us);
  }
  const rank = (map: Map<string, number>, count = top) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, us]) => ({ name, selfMs: us / 1000, percent: (100 * us) / totalUs }));
  return {
    totalMs: totalUs / 1000,
    functions: rank(functions),
    files: rank(files),
    inclusive: rank(inclusive),
    layers: rank(layers, layers.size),
    ...(options.calls ? { calls: options.calls } : {}),
  };
}

/**
 * The layer ({@link LAYERS}) of a profile node: its own, else its caller's. V8's pseudo-frames (the garbage
 * collector, idle, "program") are layers of their own; a stack with no frame of any layer is Node's or V8's
 * own work between calls (timers, microtask and event-loop turns).
 */
function layerFinder(byId: Map<number, ProfileNode>, parent: Map<number, number>): (id: number) => string {
  const known = new Map<number, string>();
  const find = (id: number): string => {
    const cached = known.get(id);
    if (cached) return cached;
    const { functionName, url } = byId.get(id)!.callFrame;
    let layer: string | undefined;
    if (!url && functionName.startsWith('(') && functionName !== '(root)') layer = functionName;
    else if (url) layer = LAYERS.find(([, pattern]) => pattern.test(sourceOf(url)))?.[0];
    if (!layer) {
      const up = parent.get(id);
      layer = up === undefined ? 'Node and V8 between calls (timers, microtasks, event loop)' : find(up);
    }
    known.set(id, layer);
    return layer;
  };
  return find;
}

/** The summary as Markdown tables. */
export function profileMarkdown(summary: ProfileSummary): string {
  const table = (title: string, rows: HotSpot[]) =>
    [
      `| ${title} | self ms | self % |`,
      '|---|---:|---:|',
      ...rows.map((r) => `| \`${r.name.replaceAll('|', '\\|')}\` | ${r.selfMs.toFixed(0)} | ${r.percent.toFixed(1)} |`),
    ].join('\n');
  const inclusive = [
    `| Our function (inclusive time) | ms | % |`,
    '|---|---:|---:|',
    ...summary.inclusive.map((r) => `| \`${r.name}\` | ${r.selfMs.toFixed(0)} | ${r.percent.toFixed(1)} |`),
  ].join('\n');
  const perCall = summary.calls;
  const layers = [
    `| Layer of a call | ms | % |${perCall ? ' µs per call |' : ''}`,
    `|---|---:|---:|${perCall ? '---:|' : ''}`,
    ...summary.layers.map(
      (r) =>
        `| ${r.name} | ${r.selfMs.toFixed(0)} | ${r.percent.toFixed(1)} |${perCall ? ` ${((r.selfMs * 1000) / perCall).toFixed(0)} |` : ''}`,
    ),
  ].join('\n');
  return `${layers}\n\n${table('Function (self time)', summary.functions)}\n\n${table('File or package (self time)', summary.files)}\n\n${inclusive}`;
}

// `node bench/cpuprofile.ts <file.cpuprofile> [top]` prints the summary.
if (import.meta.main) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node bench/cpuprofile.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  console.log(profileMarkdown(summariseCpuProfile(file, top ? Number(top) : 25)));
}
