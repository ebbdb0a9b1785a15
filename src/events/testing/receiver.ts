import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One delivery as the receiver saw it. */
export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** What the receiver answered (or `hang` when it never did). */
  answered: number | 'hang';
  /** True when the `standardwebhooks` package verified it with the receiver's secret(s) at that time. */
  verified: boolean;
}

/** How the receiver answers the n-th request (0-based): a status, or hang past the sender's timeout. */
export type Behaviour = (index: number, body: string) => { status: number; body?: string } | { hangMs: number };

/**
 * A real local HTTP server standing in for a user's webhook receiver. It verifies every delivery with the
 * reference `standardwebhooks` package (the one receivers use) and answers as the test scripts it.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  secrets: string[] = [];
  behaviour: Behaviour = () => ({ status: 200, body: 'ok' });
  #server: Server | undefined;
  #waiters: Array<() => void> = [];
  url = '';

  async start(): Promise<string> {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const index = this.received.length;
        const verified = this.secrets.some((secret) => {
          try {
            new Webhook(secret).verify(body, request.headers as Record<string, string>);
            return true;
          } catch {
            return false;
          }
        });
        const action = this.behaviour(index, body);
        this.received.push({
          headers: request.headers,
          body,
          answered: 'hangMs' in action ? 'hang' : action.status,
          verified,
        });
        for (const wake of this.#waiters.splice(0)) wake();
        if ('hangMs' in action) {
          setTimeout(() => response.destroyed || response.writeHead(200).end('too late'), action.hangMs).unref();
          return;
        }
        response.writeHead(action.status, { 'content-type': 'text/plain' }).end(action.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server!.address() as AddressInfo).port}/hook`;
    return this.url;
  }

  /** Resolves once `count` deliveries have arrived (fails the test after `timeoutMs`). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedDelivery[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} deliveries, got ${this.received.length}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50).unref();
      });
    }
    return this.received;
  }

  /** The parsed bodies received so far. */
  bodies(): Array<{ type: string; timestamp: string; data: Record<string, any> }> {
    return this.received.map((delivery) => JSON.parse(delivery.body));
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}
