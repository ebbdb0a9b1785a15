import { readFileSync, writeFileSync } from 'node:fs';
import type { CellResult } from './load.ts';

/**
 * Turns the figures of one run into `BENCHMARKS.md` and the README's "Benchmarks" section. Every ratio is
 * computed from figures of the same run; a target (issue 18's, {@link TARGETS}) is judged on the 10-key
 * instance, except memory (the larger of the two instances' peaks).
 */

/** The figures of one system under test. */
export interface SystemResult {
  /** Row label, e.g. "Tollgate · SQLite · 10 keys". */
  label: string;
  /**
   * 'bare' is the reference proxy of bench/bare-proxy.ts; older saved results have no such row. 'surface' is
   * Tollgate's 10-key instance through another API surface (Responses, Messages): shown, not judged.
   */
  kind: 'direct' | 'bare' | 'portkey' | 'tollgate' | 'surface';
  dialect?: 'sqlite' | 'postgres';
  /** 'small' (10 keys) or 'large' (the seeded scale). */
  scale?: 'small' | 'large';
  json1: CellResult;
  stream1: CellResult;
  json64: CellResult;
  stream64: CellResult;
  /** Time to first token at concurrency 64 (probe client). */
  ttft64: CellResult;
  /** Portkey's concurrency-64 non-streaming cell run again right after this row's (Tollgate rows). */
  portkeyJson64?: CellResult;
  /** Peak resident memory of the process (VmHWM), MB (10^6 bytes); absent for the direct path. */
  peakRssMB?: number;
  /** The operator's ledger check after the load (Tollgate only). */
  ledger?: string;
}

/** One system's agent loops (bench/agent-loop.ts): long prompts resent each turn, and a bystander's short calls. */
export interface AgentLoopRow {
  label: string;
  kind: SystemResult['kind'];
  /** The workload, in words, for the table's caption. */
  shape: string;
  calls: number;
  p50: number;
  p99: number;
  bystanderCalls: number;
  bystanderP50: number;
  bystanderP99: number;
  /** The gateway process's CPU per agent call (the bystander's calls included), ms; absent for the direct path. */
  cpuMsPerCall?: number;
  peakRssMB?: number;
}

/** Where and how the run happened. */
export interface RunInfo {
  command: string;
  date: string;
  machine: string[];
  settings: string[];
  scaleLabel: string;
  notes: string[];
}

/** One judged target. */
export interface TargetRow {
  target: string;
  threshold: string;
  values: Record<string, { text: string; met: boolean }>;
}

const f = (value: number | undefined, digits = 1) =>
  value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits);
const rps = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
/** A ratio with enough digits to stay readable when it is far below 1 (0.0075×, not 0.00×). */
const times = (value: number) => `${value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)}×`;
const mark = (met: boolean) => (met ? '✅ met' : '❌ missed');

/** Issue 18's thresholds, per database: the embedded default is held to more than the scale-out path. */
export const TARGETS = {
  /** Throughput at concurrency 64, non-streaming, as a multiple of Portkey's in the same run. */
  vsPortkey: { sqlite: 2, postgres: 1 },
  /** PostgreSQL's throughput at concurrency 64, non-streaming, as a multiple of Tollgate on SQLite's. */
  postgresVsSqlite: 0.6,
  /** Added latency at concurrency 1, non-streaming, ms (the difference with the direct path's). */
  addedP50Ms: { sqlite: 0.5, postgres: 1.5 },
  addedP99Ms: { sqlite: 2, postgres: 4 },
  /** Peak resident memory under load, MB (the larger of the 10-key and the large-data-set instances). */
  peakRssMB: 200,
} as const;

/** Judges issue 18's targets for each Tollgate database, from the results of one run. */
export function judgeTargets(results: SystemResult[]): TargetRow[] {
  const direct = results.find((r) => r.kind === 'direct')!;
  const portkey = results.find((r) => r.kind === 'portkey');
  const dialects = [...new Set(results.filter((r) => r.kind === 'tollgate').map((r) => r.dialect!))];
  const small = (dialect: string) =>
    results.find((r) => r.kind === 'tollgate' && r.dialect === dialect && r.scale === 'small');
  const rows: TargetRow[] = [];
  const add = (
    target: string,
    threshold: string,
    judge: (
      small: SystemResult,
      large: SystemResult | undefined,
      dialect: 'sqlite' | 'postgres',
    ) => { text: string; met: boolean } | undefined,
  ) => {
    const values: TargetRow['values'] = {};
    for (const dialect of dialects) {
      const large = results.find((r) => r.kind === 'tollgate' && r.dialect === dialect && r.scale === 'large');
      const s = small(dialect);
      const verdict = s && judge(s, large, dialect);
      if (verdict) values[dialect] = verdict;
    }
    rows.push({ target, threshold, values });
  };
  const perDialect = (limits: { sqlite: number; postgres: number }, unit: string, sign: string) =>
    `SQLite ${sign} ${limits.sqlite}${unit}; PostgreSQL ${sign} ${limits.postgres}${unit}`;
  if (portkey) {
    add(
      'Throughput, concurrency 64, vs Portkey (non-streaming)',
      perDialect(TARGETS.vsPortkey, '×', '≥'),
      (s, _, dialect) => {
        // Against Portkey measured right after this row when the run did so (see bench/run.ts), else its row.
        const base = s.portkeyJson64 ?? portkey.json64;
        const ratio = s.json64.rps / base.rps;
        const beside = s.portkeyJson64 ? `; Portkey's row: ${rps(portkey.json64.rps)}` : '';
        return {
          text: `${times(ratio)} (${rps(s.json64.rps)} vs ${rps(base.rps)} req/s${s.portkeyJson64 ? ' measured right after' : ''}${beside})`,
          met: ratio >= TARGETS.vsPortkey[dialect],
        };
      },
    );
  }
  add(
    'Throughput, concurrency 64, PostgreSQL vs Tollgate on SQLite (non-streaming)',
    `≥ ${TARGETS.postgresVsSqlite}×`,
    (s, _, dialect) => {
      const sqlite = small('sqlite');
      if (dialect !== 'postgres' || !sqlite) return undefined;
      const ratio = s.json64.rps / sqlite.json64.rps;
      return {
        text: `${times(ratio)} (${rps(s.json64.rps)} vs ${rps(sqlite.json64.rps)} req/s)`,
        met: ratio >= TARGETS.postgresVsSqlite,
      };
    },
  );
  add(
    'Added latency, concurrency 1, p50 (non-streaming)',
    perDialect(TARGETS.addedP50Ms, ' ms', '≤'),
    (s, _, dialect) => {
      const added = s.json1.p50 - direct.json1.p50;
      return { text: `${f(added, 2)} ms`, met: added <= TARGETS.addedP50Ms[dialect] };
    },
  );
  add(
    'Added latency, concurrency 1, p99 (non-streaming)',
    perDialect(TARGETS.addedP99Ms, ' ms', '≤'),
    (s, _, dialect) => {
      const added = s.json1.p99 - direct.json1.p99;
      return { text: `${f(added, 2)} ms`, met: added <= TARGETS.addedP99Ms[dialect] };
    },
  );
  add('Peak resident memory under load', `< ${TARGETS.peakRssMB} MB`, (s, l) => {
    const peak = Math.max(s.peakRssMB ?? 0, l?.peakRssMB ?? 0);
    return { text: `${f(peak, 0)} MB`, met: peak < TARGETS.peakRssMB };
  });
  return rows;
}

/** The row label of the bare Node proxy (bench/bare-proxy.ts). */
export const BARE_PROXY_LABEL = 'Bare Node proxy (undici, no gateway logic)';

/**
 * The paragraph under the targets table that puts the throughput figures in proportion: how much of the
 * direct path's throughput at concurrency 64 a proxy that does nothing but forward keeps, in the same run,
 * and the blank line after it. No lines when the run has no bare-proxy row (results saved before it existed).
 */
export function proxyCeiling(results: SystemResult[]): string[] {
  const direct = results.find((r) => r.kind === 'direct');
  const bare = results.find((r) => r.kind === 'bare');
  if (!direct || !bare) return [];
  const share = (cell: 'json64' | 'stream64') =>
    `${times(bare[cell].rps / direct[cell].rps)} (${rps(bare[cell].rps)} vs ${rps(direct[cell].rps)} req/s)`;
  return [
    `For scale: the bare Node proxy of the figures below, which only forwards (undici's request), keeps ${share('json64')} of the direct path's throughput at concurrency 64 non-streaming and ${share('stream64')} streaming — the ceiling, on this machine, of a Node proxy forwarding with the client Tollgate uses, gateway logic or not.`,
    '',
  ];
}

/** The targets table; columns are the databases. */
export function targetsTable(rows: TargetRow[]): string {
  const dialects = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const name = (d: string) => (d === 'sqlite' ? 'Tollgate on SQLite' : 'Tollgate on PostgreSQL');
  return [
    `| Target | Threshold | ${dialects.map(name).join(' | ')} |`,
    `|---|---|${dialects.map(() => '---|').join('')}`,
    ...rows.map(
      (row) =>
        `| ${row.target} | ${row.threshold} | ${dialects.map((d) => (row.values[d] ? `${mark(row.values[d].met)}: ${row.values[d].text}` : '–')).join(' | ')} |`,
    ),
  ].join('\n');
}

/** The two figure tables: non-streaming and streaming, one row per system. */
export function figureTables(results: SystemResult[]): string {
  const direct = results.find((r) => r.kind === 'direct')!;
  const portkey = results.find((r) => r.kind === 'portkey');
  const ratio = (value: number, base: number | undefined) => (base ? times(value / base) : '–');
  const added = (value: number, base: number, r: SystemResult) => (r.kind === 'direct' ? '–' : f(value - base, 2));
  const failed = (r: SystemResult) =>
    [r.json1, r.stream1, r.json64, r.stream64, r.ttft64].reduce((sum, c) => sum + c.failed, 0);
  const json = [
    '**Non-streaming chat** (latencies in ms; "added" is the difference with the direct path in the same run)',
    '',
    '| System | c=1 req/s | c=1 p50 | c=1 p99 | added p50 | added p99 | c=64 req/s | c=64 p50 | c=64 p99 | c=64 vs direct | c=64 vs Portkey | peak RSS MB | failed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.label} | ${rps(r.json1.rps)} | ${f(r.json1.p50, 2)} | ${f(r.json1.p99, 2)} | ${added(r.json1.p50, direct.json1.p50, r)} | ${added(r.json1.p99, direct.json1.p99, r)} | ${rps(r.json64.rps)} | ${f(r.json64.p50, 0)} | ${f(r.json64.p99, 0)} | ${ratio(r.json64.rps, direct.json64.rps)} | ${ratio(r.json64.rps, portkey?.json64.rps)} | ${f(r.peakRssMB, 0)} | ${failed(r)} |`,
    ),
  ];
  const stream = [
    '**Streaming chat** (TTFT: time to the first `data:` frame; total: until the last byte)',
    '',
    '| System | c=1 req/s | c=1 TTFT p50 | c=1 TTFT p99 | added TTFT p50 | c=1 total p50 | c=1 total p99 | c=64 req/s | c=64 total p50 | c=64 total p99 | c=64 TTFT p50 | c=64 TTFT p99 | c=64 vs direct | c=64 vs Portkey |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.label} | ${rps(r.stream1.rps)} | ${f(r.stream1.ttftP50, 2)} | ${f(r.stream1.ttftP99, 2)} | ${added(r.stream1.ttftP50!, direct.stream1.ttftP50!, r)} | ${f(r.stream1.p50, 2)} | ${f(r.stream1.p99, 2)} | ${rps(r.stream64.rps)} | ${f(r.stream64.p50, 0)} | ${f(r.stream64.p99, 0)} | ${f(r.ttft64.ttftP50, 1)} | ${f(r.ttft64.ttftP99, 1)} | ${ratio(r.stream64.rps, direct.stream64.rps)} | ${ratio(r.stream64.rps, portkey?.stream64.rps)} |`,
    ),
  ];
  return `${json.join('\n')}\n\n${stream.join('\n')}`;
}

/**
 * CPU time per non-streaming call, by process and thread (bench/cpu.ts), at concurrency 1 and 64; no table
 * for results saved before the figures existed.
 */
export function cpuTable(results: SystemResult[]): string[] {
  const measured = results.filter((r) => r.json64.cpu);
  if (measured.length === 0) return [];
  const us = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(0));
  const total = (cpu: NonNullable<CellResult['cpu']>) =>
    (cpu.gatewayMain ?? 0) + (cpu.gatewayOther ?? 0) + (cpu.postgres ?? 0) + cpu.mock + cpu.loadGenerator;
  return [
    '## CPU time per call',
    '',
    "µs of CPU per completed non-streaming call, read from /proc around each measured cell: the gateway's JavaScript thread (a Node server runs its handlers on that one thread, so its time per call bounds the gateway's throughput: 1,000,000 µs / that figure is the most calls per second one process can serve), the gateway's other threads (V8's garbage-collector and compiler helpers, libuv's pool), every PostgreSQL process, the mock upstream and the load generator (this script). All share the machine's cores. Ticks are 10 ms, so a cell's figure is good to a few percent.",
    '',
    '| System | c=1 main thread | c=1 other threads | c=64 main thread | c=64 other threads | c=64 PostgreSQL | c=64 mock | c=64 load generator | c=64 all processes | c=64 main-thread bound (req/s) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...measured.map((r) => {
      const [one, many] = [r.json1.cpu, r.json64.cpu!];
      const bound = many.gatewayMain ? (1e6 / many.gatewayMain).toFixed(0) : '–';
      return `| ${r.label} | ${us(one?.gatewayMain)} | ${us(one?.gatewayOther)} | ${us(many.gatewayMain)} | ${us(many.gatewayOther)} | ${us(many.postgres)} | ${us(many.mock)} | ${us(many.loadGenerator)} | ${us(total(many))} | ${bound} |`;
    }),
    '',
  ];
}

/** The agent loops' table, "added" against the direct path's row; empty when the run had none. */
export function agentLoopSection(rows: AgentLoopRow[]): string[] {
  if (rows.length === 0) return [];
  const direct = rows.find((row) => row.kind === 'direct');
  const added = (value: number, base: number | undefined) => (base === undefined ? '–' : f(value - base));
  return [
    `**Agent loops** (\`bench/agent-loop.ts\`: ${rows[0]!.shape}; meanwhile a bystander, another user, makes short calls one after another; latencies in ms)`,
    '',
    '| System | calls | p50 | p99 | added p50 | added p99 | bystander calls | bystander p50 | bystander p99 | CPU ms per agent call | peak RSS MB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows
      .map((row) =>
        [
          row.label,
          row.calls,
          f(row.p50),
          f(row.p99),
          row === direct ? '–' : added(row.p50, direct?.p50),
          row === direct ? '–' : added(row.p99, direct?.p99),
          row.bystanderCalls,
          f(row.bystanderP50),
          f(row.bystanderP99),
          f(row.cpuMsPerCall),
          f(row.peakRssMB, 0),
        ].join(' | '),
      )
      .map((line) => `| ${line} |`),
    '',
  ];
}

/** The whole `BENCHMARKS.md`. */
export function benchmarksMarkdown(
  info: RunInfo,
  results: SystemResult[],
  targets: TargetRow[],
  profiles: string[],
  agentLoops: AgentLoopRow[] = [],
): string {
  const ledgers = results.filter((r) => r.ledger).map((r) => `- ${r.label}: ${r.ledger}`);
  return [
    '# Benchmarks',
    '',
    `Written by \`${info.command}\` (bench/run.ts) on ${info.date}. Every figure below comes from that one run; rerun the command to`,
    'replace this file and the table in the README.',
    '',
    '## Machine',
    '',
    ...info.machine.map((line) => `- ${line}`),
    '',
    '## How it was measured',
    '',
    ...info.settings.map((line) => `- ${line}`),
    '',
    '## Targets (issue 18)',
    '',
    targetsTable(targets),
    '',
    ...proxyCeiling(results),
    '## Figures',
    '',
    figureTables(results),
    '',
    ...agentLoopSection(agentLoops),
    ...cpuTable(results),
    ...(ledgers.length
      ? [
          '## Billing after the load',
          '',
          "The operator's ledger check (`GET /api/admin/ledger/verify`) after each Tollgate instance's load:",
          '',
          ...ledgers,
          '',
        ]
      : []),
    ...(info.notes.length ? ['## Notes', '', ...info.notes.map((line) => `- ${line}`), ''] : []),
    ...(profiles.length ? ['## Profiles of the missed targets', '', ...profiles, ''] : []),
  ].join('\n');
}

const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

/**
 * Puts `body` between the benchmark markers of README.md, adding a "Benchmarks" section before "Deployment"
 * (or at the end) the first time. The file is read right before the write: other work edits it too.
 */
export function updateReadme(path: string, body: string): void {
  const readme = readFileSync(path, 'utf8');
  const block = `${START}\n${body.trim()}\n${END}`;
  let next: string;
  if (readme.includes(START) && readme.includes(END)) {
    next = readme.slice(0, readme.indexOf(START)) + block + readme.slice(readme.indexOf(END) + END.length);
  } else {
    const section = `## Benchmarks\n\n${block}\n\n`;
    const before = readme.indexOf('\n## Deployment');
    next =
      before >= 0
        ? `${readme.slice(0, before + 1)}${section}${readme.slice(before + 1)}`
        : `${readme.trimEnd()}\n\n${section.trimEnd()}\n`;
  }
  writeFileSync(path, next);
}
