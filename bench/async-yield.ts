/**
 * `node bench/async-yield.ts [events]`: why the stream loops (the OpenAI-compatible provider, Anthropic's
 * reader, echo) yield a chunk's canonical events one by one with `for … of` rather than `yield*` over the
 * array. Inside an async generator, `yield*` of a synchronous iterable goes through an async-from-sync
 * iterator, one more promise per step. Each variant passes `events` one-event arrays through an async
 * generator to a `for await` consumer, alternated twice; prints µs per event.
 */

const EVENTS = Number(process.argv[2] ?? 1_000_000);

async function* delegating(): AsyncGenerator<{ type: string; delta: string }> {
  for (let i = 0; i < EVENTS; i++) yield* [{ type: 'text', delta: 'x' }];
}

async function* looping(): AsyncGenerator<{ type: string; delta: string }> {
  for (let i = 0; i < EVENTS; i++) for (const event of [{ type: 'text', delta: 'x' }]) yield event;
}

for (const [name, generator] of [
  ['yield* over the array', delegating],
  ['for … of, yield each', looping],
  ['yield* over the array', delegating],
  ['for … of, yield each', looping],
] as const) {
  const started = performance.now();
  let seen = 0;
  for await (const _ of generator()) seen++;
  if (seen !== EVENTS) throw new Error(`${name}: ${seen} events, expected ${EVENTS}`);
  console.log(`${name}: ${(((performance.now() - started) * 1000) / EVENTS).toFixed(3)} µs per event`);
}
