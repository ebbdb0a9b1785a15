import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A relay that can be cut and restored, frozen and thawed; `url` is its `redis://` address. */
export interface Relay {
  url: string;
  /** Its loopback port, for a URL of another scheme. */
  port: number;
  cut(): void;
  restore(): void;
  freeze(): void;
  thaw(): void;
  /**
   * The server's replies on the connections open now are lost from here on, the connections staying open, as
   * when a partition falls after a statement arrived: the server does the work (a COMMIT lands) and the client
   * never hears of it. Connections opened afterwards work.
   */
  loseReplies(): void;
}

/**
 * A TCP relay to the test Redis that can be cut and restored: Redis going away (and coming back) for one
 * process, without stopping the Redis other suites share. `freeze` keeps the connections open but holds what
 * goes through them until `thaw`, as a Redis that stopped answering (paused, stalled, a partition that drops
 * packets) looks to its clients.
 */
export function startRedisRelay(): Promise<Relay> {
  return startTcpRelay(6379);
}

/** The same relay to another local server: PostgreSQL (`TEST_POSTGRES_URL`'s port) going away for one process. */
export async function startTcpRelay(targetPort: number): Promise<Relay> {
  let up = true;
  let frozen = false;
  const sockets = new Set<Socket>();
  const held: Array<{ to: Socket; chunk: Buffer }> = [];
  const servers = new Set<Socket>();
  const muted = new WeakSet<Socket>();
  const forward = (from: Socket, to: Socket) =>
    from.on('data', (chunk: Buffer) => {
      if (muted.has(from)) return;
      if (frozen) held.push({ to, chunk });
      else to.write(chunk);
    });
  const server = createServer((client) => {
    if (!up) return void client.destroy();
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    servers.add(upstream);
    upstream.on('close', () => servers.delete(upstream));
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      up = true;
    },
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const { to, chunk } of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    loseReplies() {
      for (const upstream of servers) muted.add(upstream);
    },
  };
}
