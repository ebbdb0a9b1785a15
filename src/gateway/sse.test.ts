import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CanonicalEvent } from './canonical.ts';
import { relayEvents } from './sse.ts';

/** A relayed stream of two events with `gapMs` of upstream silence between them, read whole by a client. */
describe('relaying a stream to its client', () => {
  let server: Server;
  let url: string;
  before(async () => {
    server = createServer((req, res) => {
      const gapMs = Number(new URL(req.url!, 'http://x').searchParams.get('gap'));
      async function* events(): AsyncGenerator<CanonicalEvent> {
        yield { type: 'text', text: 'first' } as unknown as CanonicalEvent;
        await sleep(gapMs);
        yield { type: 'text', text: 'second' } as unknown as CanonicalEvent;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      void relayEvents(res, events(), { render: (event) => `data: ${JSON.stringify(event)}\n\n` }, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('an upstream silence longer than the keep-alive interval sends comment lines, so the client does not give up', async () => {
    const text = await (await fetch(`${url}?gap=400`)).text();
    const [first, between, second] = text.split(/^data: .*$/m);
    assert.equal(first, '');
    assert.equal(second, '\n\n');
    // Some comments (one per 50 ms interval of silence), and nothing else, between the two frames.
    assert.match(between, /^\n\n(: keep-alive\n\n){3,}$/);
  });

  it('a stream that is never silent for a whole interval gets no comment', async () => {
    const text = await (await fetch(`${url}?gap=0`)).text();
    assert.doesNotMatch(text, /keep-alive/);
    assert.equal(text.match(/^data: /gm)?.length, 2);
  });
});
