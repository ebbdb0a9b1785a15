import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { processMicros } from './cpu.ts';
import { quantile } from './load.ts';
import { CHAT_BODY } from './profile.ts';
import { firstJsonLine, spawnNode, type Child } from './processes.ts';
import {
  ADMIN_TOKEN,
  createStore,
  provision,
  startTollgate,
  UPSTREAM_MODEL,
  MODEL_ID,
  type Tollgate,
} from './tollgate.ts';

/**
 * Agent loops: the long prompts real traffic sends. A coding agent resends its whole conversation on every
 * turn (a long system prompt and tool definitions, every earlier message, and each tool's output), so a
 * gateway sees the same 100 K+ characters again and again, with a few new ones at the end.
 *
 * `node bench/agent-loop.ts [sqlite|postgres] [checkout …]`: BENCH_AGENTS conversations (8) run at once, each
 * BENCH_TURNS non-streaming turns (20) that start from a BENCH_SYSTEM_CHARS system prompt (100,000) and
 * add a BENCH_TOOL_CHARS tool result (8,000) per turn. The same conversations go first straight to the mock
 * upstream (the direct path), then through Tollgate of each checkout given (default: this one; compare a
 * change with its base, as bench/ab.ts does). Per system: the calls' latency (p50, p99) and what Tollgate
 * adds to the direct path's, the instance's CPU time per agent call (/proc, user + system; the bystander's
 * calls included), and what a bystander saw meanwhile: another user making short calls one after another.
 */

/** The shape of the workload. */
export interface AgentLoopShape {
  /** Conversations at once. */
  agents: number;
  /** Turns of each. */
  turns: number;
  /** Characters of the system prompt each starts from. */
  systemChars: number;
  /** Characters of the tool result each turn adds. */
  toolChars: number;
}

/** The shape BENCH_AGENTS, BENCH_TURNS, BENCH_SYSTEM_CHARS and BENCH_TOOL_CHARS give, or the defaults. */
export function agentLoopShape(defaults: Partial<AgentLoopShape> = {}): AgentLoopShape {
  const env = process.env;
  return {
    agents: Number(env.BENCH_AGENTS ?? defaults.agents ?? 8),
    turns: Number(env.BENCH_TURNS ?? defaults.turns ?? 20),
    systemChars: Number(env.BENCH_SYSTEM_CHARS ?? defaults.systemChars ?? 100_000),
    toolChars: Number(env.BENCH_TOOL_CHARS ?? defaults.toolChars ?? 8_000),
  };
}

/** Real text to slice prompts from: this repository's docs and sources (English, Markdown and code). */
function corpus(shape: AgentLoopShape): string {
  const files = ['README.md', 'docs/scaling.md', 'docs/architecture.md'];
  for (const dir of ['src/gateway', 'src/billing', 'src/providers']) {
    for (const name of readdirSync(dir)) if (name.endsWith('.ts')) files.push(join(dir, name));
  }
  let text = files.map((file) => readFileSync(file, 'utf8')).join('\n\n');
  while (text.length < 4 * (shape.systemChars + shape.toolChars * shape.turns)) text += text;
  return text;
}

/** One agent's conversation: its system prompt, then a tool result per turn, each a different slice of text. */
function conversation(text: string, agent: number, shape: AgentLoopShape): { system: string; tools: string[] } {
  const { systemChars, toolChars, turns } = shape;
  const start = (agent * 7919 * 13) % (text.length - systemChars - toolChars * turns);
  const system = text.slice(start, start + systemChars);
  const tools = Array.from({ length: turns }, (_, turn) => {
    const from = start + systemChars + turn * toolChars;
    return text.slice(from, from + toolChars);
  });
  return { system, tools };
}

/** What one system did with the workload: every agent call's latency and the bystander's, sorted, in ms. */
export interface AgentLoopRun {
  latencies: number[];
  promptChars: number;
  /** Latencies of the short calls a bystander made one after another meanwhile. */
  bystander: number[];
}

/**
 * Every agent's turns against one chat completions endpoint, the agents at once (each turn waits for the
 * previous answer), and meanwhile the bystander's short calls. Agent `i` uses `keys[i % (keys.length - 1)]`,
 * the bystander the last key; `headers` go with every request (a gateway's own, e.g. Portkey's).
 */
export async function runAgentLoop(
  url: string,
  model: string,
  keys: string[],
  shape: AgentLoopShape,
  headers: Record<string, string> = {},
): Promise<AgentLoopRun> {
  const text = corpus(shape);
  const latencies: number[] = [];
  const bystander: number[] = [];
  let promptChars = 0;
  let running = true;
  // Another user's short calls, one after another while the agents run: what their long prompts cost the rest.
  const short = JSON.stringify({ ...CHAT_BODY, model });
  const bystanderKey = keys[keys.length - 1];
  const bystanding = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bystanderKey}`, ...headers },
        body: short,
      });
      await response.text();
      if (response.status !== 200) throw new Error(`${url} answered ${response.status} to the bystander`);
      bystander.push(performance.now() - started);
    }
  })();
  await Promise.all(
    Array.from({ length: shape.agents }, async (_, agent) => {
      const { system, tools } = conversation(text, agent, shape);
      const key = keys[agent % (keys.length - 1 || 1)];
      const messages: Array<Record<string, unknown>> = [
        { role: 'system', content: system },
        { role: 'user', content: 'Find where the hold is placed and explain it.' },
      ];
      for (let turn = 0; turn < shape.turns; turn++) {
        const body = JSON.stringify({ model, max_tokens: 64, messages });
        promptChars += body.length;
        const started = performance.now();
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
          body,
        });
        const answer = await response.text();
        latencies.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${answer.slice(0, 300)}`);
        const reply = JSON.parse(answer).choices[0].message.content as string;
        messages.push({ role: 'assistant', content: reply });
        messages.push({ role: 'user', content: `Tool output:\n${tools[turn]}` });
      }
    }),
  );
  running = false;
  await bystanding;
  return { latencies: latencies.sort((a, b) => a - b), promptChars, bystander: bystander.sort((a, b) => a - b) };
}

/** Long prompt texts remembered and counted, from the instance's /metrics. */
async function promptTextMetrics(instance: Tollgate): Promise<string> {
  const text = await (
    await fetch(`${instance.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })
  ).text();
  const lines = text.split('\n').filter((line) => line.startsWith('tollgate_prompt_long_texts_total{'));
  return lines.map((line) => line.replace('tollgate_prompt_long_texts_total', '')).join(', ') || 'none';
}

if (import.meta.main) {
  const [dialect = 'sqlite', ...checkoutArgs] = process.argv.slice(2);
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('database: sqlite or postgres');
  const checkouts = checkoutArgs.length ? checkoutArgs.map((path) => resolve(path)) : [process.cwd()];
  const shape = agentLoopShape();
  const mock: Child = spawnNode('mock-upstream', ['bench/mock-upstream.ts'], { cwd: process.cwd() });
  const rows: string[] = [];
  try {
    const { url: upstreamUrl } = await firstJsonLine<{ url: string }>(mock);
    const direct = await runAgentLoop(`${upstreamUrl}/v1/chat/completions`, UPSTREAM_MODEL, ['x', 'x'], shape);
    const p = (run: AgentLoopRun, q: number) => quantile(run.latencies, q);
    const b = (run: AgentLoopRun, q: number) => quantile(run.bystander, q);
    const bystanderCells = (run: AgentLoopRun) =>
      `${run.bystander.length} | ${b(run, 0.5).toFixed(2)} | ${b(run, 0.99).toFixed(1)} | ${run.bystander.at(-1)!.toFixed(1)}`;
    const calls = shape.agents * shape.turns;
    console.log(
      JSON.stringify({
        system: 'direct',
        calls,
        p50: p(direct, 0.5),
        p99: p(direct, 0.99),
        promptChars: direct.promptChars / calls,
        bystander: { calls: direct.bystander.length, p50: b(direct, 0.5), p99: b(direct, 0.99) },
      }),
    );
    rows.push(
      `| direct | ${calls} | ${p(direct, 0.5).toFixed(1)} | ${p(direct, 0.99).toFixed(1)} | – | – | – | – | ${bystanderCells(direct)} |`,
    );
    for (const checkout of checkouts) {
      const { store, dispose } = await createStore(dialect);
      try {
        const instance = await startTollgate(store, upstreamUrl, [], checkout);
        try {
          const keys = await provision(instance, shape.agents + 1);
          const before = processMicros(instance.child.pid) / 1000;
          const run = await runAgentLoop(`${instance.baseUrl}/api/v1/chat/completions`, MODEL_ID, keys, shape);
          const cpuPerCall = (processMicros(instance.child.pid) / 1000 - before) / calls;
          const memory = await promptTextMetrics(instance);
          const cell = {
            system: checkout,
            dialect,
            calls,
            p50: p(run, 0.5),
            p99: p(run, 0.99),
            addedP50: p(run, 0.5) - p(direct, 0.5),
            addedP99: p(run, 0.99) - p(direct, 0.99),
            cpuMsPerCall: cpuPerCall,
            peakRssMiB: instance.child.peakRssMiB(),
            promptTexts: memory,
            bystander: { calls: run.bystander.length, p50: b(run, 0.5), p99: b(run, 0.99), max: run.bystander.at(-1) },
          };
          console.log(JSON.stringify(cell));
          rows.push(
            `| ${checkout} (${dialect}) | ${calls} | ${cell.p50.toFixed(1)} | ${cell.p99.toFixed(1)} | +${cell.addedP50.toFixed(1)} | +${cell.addedP99.toFixed(1)} | ${cpuPerCall.toFixed(2)} | ${memory} | ${bystanderCells(run)} |`,
          );
        } finally {
          await instance.child.stop(15_000);
        }
      } finally {
        await dispose();
      }
    }
  } finally {
    await mock.stop(3_000);
  }
  console.log(
    `\nAgent loops: ${shape.agents} conversations at once, ${shape.turns} turns each, a ${shape.systemChars.toLocaleString('en')}-character system prompt and a ${shape.toolChars.toLocaleString('en')}-character tool result per turn (latencies in ms).\n`,
  );
  console.log(
    '| System | Calls | p50 | p99 | added p50 | added p99 | CPU ms per call | Long prompt texts | Bystander calls | Bystander p50 | Bystander p99 | Bystander max |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}
