import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/**
 * Reads a V8 `.cpuprofile` (what `node --cpu-prof` writes) into the two views that find a hot spot fastest:
 * the functions with the most self time, and self time summed per source file or package.
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
}

/** Where a frame's code lives, short: `src/gateway/chat.ts`, `node_modules/kysely`, `node:internal/…`, or a V8 pseudo-frame. */
function placeOf(url: string): string {
  if (!url) return '(native/V8)';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = path.slice(modules + '/node_modules/'.length).split('/');
    return `node_modules/${parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  return path.startsWith('/') ? relative(process.cwd(), path) : path;
}

/** Summarises the profile at `file`: the `top` functions and files by self time. */
export function summariseCpuProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
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
  const rank = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: us / 1000, percent: (100 * us) / totalUs }));
  return { totalMs: totalUs / 1000, functions: rank(functions), files: rank(files), inclusive: rank(inclusive) };
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
  return `${table('Function (self time)', summary.functions)}\n\n${table('File or package (self time)', summary.files)}\n\n${inclusive}`;
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
