import { countTextTokens, StreamedTextTokens } from '../src/providers/tokens.ts';

/**
 * What a long stream keeps for its own output count: every delta in an array (as before `StreamedTextTokens`)
 * against the streamed counter. Deltas are JSON-parsed strings, as a provider's chunks give them; the heap is
 * read after a full collection, with the tokenizer already loaded.
 *
 * `node --expose-gc bench/streamed-count.ts [deltas]` (default 180,000: an hour at 50 deltas a second).
 */
const DELTAS = Number(process.argv[2] ?? 180_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const heapUsed = () => {
  gc();
  return process.memoryUsage().heapUsed;
};
// Prose in deltas of a word or so, with sentence ends and paragraph breaks, as a model writes it.
const words = ['The', ' toll', ' road', ' opens', ' at', ' dawn', ',', ' and', ' every', ' gate', ' counts', ' cars'];
const delta = (i: number): string => {
  const word = words[i % words.length]! + (i % 97 === 0 ? ' ' + String(i) : '') + (i % 12 === 11 ? '.' : '');
  return JSON.parse(JSON.stringify({ d: i % 60 === 59 ? word + '\n\n' : word })).d;
};

// Each way as the stream meets it: the counter counts as the text comes (on every stream, reported usage
// or not); the array only keeps, and is counted once at the end when the upstream reported no usage.
const before = heapUsed();
const counter = new StreamedTextTokens();
let cpu = process.cpuUsage();
for (let i = 0; i < DELTAS; i++) counter.add(delta(i));
const counterCpu = process.cpuUsage(cpu);
const counterBytes = heapUsed() - before;

const before2 = heapUsed();
const kept: string[] = [];
cpu = process.cpuUsage();
for (let i = 0; i < DELTAS; i++) kept.push(delta(i));
const keptCpu = process.cpuUsage(cpu);
const keptBytes = heapUsed() - before2;
cpu = process.cpuUsage();
const wholeTokens = countTextTokens(kept.join(''));
const countAtEndCpu = process.cpuUsage(cpu);
const ms = (usage: NodeJS.CpuUsage) => Math.round((usage.user + usage.system) / 1000);
console.log(
  JSON.stringify({
    deltas: DELTAS,
    everyDeltaKeptKiB: Math.round(keptBytes / 1024),
    everyDeltaKeptCpuMs: ms(keptCpu),
    countedOnceAtTheEndCpuMs: ms(countAtEndCpu),
    streamedCounterKiB: Math.round(counterBytes / 1024),
    streamedCounterCpuMs: ms(counterCpu),
    charactersHeld: counter.held,
    tokens: counter.total,
    sameCountAsTheWholeText: counter.total === wholeTokens,
  }),
);
