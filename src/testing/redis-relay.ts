import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay to the test Redis that can be cut and restored: Redis going away (and coming back) for one
 * process, without stopping the Redis other suites share.
 */
export async function startRedisRelay(): Promise<{ url: string; cut(): void; restore(): void }> {
  let up = true;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    if (!up) return void client.destroy();
    const upstream = connect(6379, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
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
  };
}
