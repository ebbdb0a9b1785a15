import { sql } from 'kysely';
import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { Migration } from 'kysely';
import type { AppContext } from '../platform/context.ts';
import { Gauge } from 'prom-client';
import { pendingMigrations } from '../platform/db/migrate.ts';
import { diskFullWatchOf } from '../platform/db/unavailable.ts';
import type { Redis } from '../platform/redis.ts';

const Check = Type.Object({ ok: Type.Boolean(), detail: Type.Optional(Type.String()) });

/** How long `/readyz` waits for the database: a load balancer's health check usually gives up after 5 s. */
const DATABASE_CHECK_MS = 2000;

/**
 * `/healthz` says the process is alive (no dependency is touched, so a slow database does not get a
 * live process killed); `/readyz` says it can serve: database reachable, migrations applied, Redis
 * reachable when configured, the database's disk not full. A load balancer routes only to ready instances.
 */
export function registerHealthRoutes(
  app: App,
  ctx: AppContext,
  redis: Redis | null,
  migrations: Record<string, Migration>,
): void {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary:
          'Readiness: database and migrations (503 without them); Redis, the database disk (degraded, still 200, without Redis or with the disk full)',
        response: {
          200: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Check) }),
          503: Type.Object({ status: Type.String(), checks: Type.Record(Type.String(), Check) }),
        },
      },
    },
    async (_request, reply) => {
      const checks: Record<string, { ok: boolean; detail?: string }> = {};
      let timer: NodeJS.Timeout | undefined;
      try {
        // A database that stopped answering (a partition, a stalled server) leaves its query waiting: the
        // check gives up first, so that a load balancer hears "not ready" instead of timing out on us.
        const silent = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${DATABASE_CHECK_MS / 1000} s`)),
            DATABASE_CHECK_MS,
          );
        });
        const pending = await Promise.race([
          (async () => {
            await sql`select 1`.execute(ctx.db);
            checks.database = { ok: true };
            return pendingMigrations(ctx.db, migrations, ctx.config);
          })(),
          silent,
        ]);
        checks.migrations = pending.length ? { ok: false, detail: `pending: ${pending.join(', ')}` } : { ok: true };
      } catch (error) {
        checks.database = { ok: false, detail: (error as Error).message };
      } finally {
        clearTimeout(timer);
      }
      // Without the database nothing can be served: not ready. Without Redis every call still is (the rate limits
      // count in the process until it is back): ready, and said to be degraded, so that a Redis outage does not
      // take every instance out of the load balancer at once.
      const ready = Object.values(checks).every((c) => c.ok);
      if (redis) checks.redis = await redisCheck(redis);
      // A full disk refuses writes (503 naming it) while reads go on: degraded, still 200. Taken out of the
      // load balancer, the instance would answer nothing at all, and on PostgreSQL every instance shares the
      // disk, so all would go at once.
      const diskFull = diskFullWatchOf(ctx.db);
      if (diskFull) checks.disk = diskFull.full ? { ok: false, detail: diskFull.describe() } : { ok: true };
      const degraded = checks.redis?.ok === false || checks.disk?.ok === false;
      const status = !ready ? 'not ready' : degraded ? 'degraded' : 'ready';
      return reply.code(ready ? 200 : 503).send({ status, checks });
    },
  );
}

/**
 * Whether Redis answers a PING. Bounded by the client's own `commandTimeout` (platform/redis.ts), which also
 * covers a command waiting in the offline queue: during an outage the PING fails within a second instead of
 * waiting for the next reconnection attempt, so a load balancer hears the answer before it gives up.
 */
async function redisCheck(redis: Redis): Promise<{ ok: boolean; detail?: string }> {
  try {
    await redis.ping();
    return { ok: true };
  } catch (error) {
    return { ok: false, detail: `${(error as Error).message} (${redis.status})` };
  }
}

/**
 * `tollgate_database_disk_full`: 1 while the database's disk is full (from a write refused for lack of space
 * until one succeeds again), else 0. An alert on it names the cause that the 503s only count.
 */
export function registerDiskFullGauge(ctx: AppContext): void {
  new Gauge({
    name: 'tollgate_database_disk_full',
    help: "1 while the database's disk is full and writes are refused (503), else 0.",
    registers: [ctx.metrics.registry],
    collect() {
      this.set(diskFullWatchOf(ctx.db)?.full ? 1 : 0);
    },
  });
}
