import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay to the test Redis that can be cut and restored: Redis going away (and coming back) for one
 * process, without stopping the Redis other suites share. `freeze` keeps the connections open but holds what
 * goes through them until `thaw`, as a Redis that stopped answering (paused, stalled, a partition that drops
 * packets) looks to its clients.
 */
export async function startRedisRelay(): Promise<{
  url: string;
  cut(): void;
  restore(): void;
  freeze(): void;
  thaw(): void;
}> {
  let up = true;
  let frozen = false;
  const sockets = new Set<Socket>();
  const held: Array<{ to: Socket; chunk: Buffer }> = [];
  const forward = (from: Socket, to: Socket) =>
    from.on('data', (chunk: Buffer) => (frozen ? held.push({ to, chunk }) : to.write(chunk)));
  const server = createServer((client) => {
    if (!up) return void client.destroy();
    const upstream = connect(6379, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
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
  };
}
