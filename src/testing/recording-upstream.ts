import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server on a random loopback port that stands in for an upstream provider: it reads each request's
 * JSON body whole, keeps it (in order, whatever the answer), and hands it to the test's `answer`. What every
 * scripted upstream of the tests shares, so that each keeps only what its provider says.
 */
export interface RecordingUpstream {
  /** `http://127.0.0.1:<port>` (a provider's base URL). */
  url: string;
  /** Request bodies received, in order. */
  bodies: any[];
  /**
   * Holds the next request back before it is answered: `arrived` resolves once it is in, `release()` lets it be
   * answered. A test reads what the gateway holds for a call while the call runs.
   */
  gate(): { arrived: Promise<void>; release: () => void };
  close(): Promise<void>;
}

/** How a scripted upstream answers one request: its path (no query string), its parsed body, the response. */
export type UpstreamAnswer = (path: string, body: any, res: ServerResponse) => void | Promise<void>;

/** Starts a recording upstream that answers each request with `answer`. */
export async function startRecordingUpstream(answer: UpstreamAnswer): Promise<RecordingUpstream> {
  const bodies: any[] = [];
  let gate: { arrived: PromiseWithResolvers<void>; released: PromiseWithResolvers<void> } | null = null;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    bodies.push(body);
    const waiting = gate;
    gate = null;
    if (waiting) {
      waiting.arrived.resolve();
      await waiting.released.promise;
    }
    await answer((req.url ?? '').split('?')[0]!, body, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    gate() {
      gate = { arrived: Promise.withResolvers<void>(), released: Promise.withResolvers<void>() };
      const { arrived, released } = gate;
      return { arrived: arrived.promise, release: () => released.resolve() };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
