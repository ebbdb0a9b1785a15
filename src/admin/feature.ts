import Type from 'typebox';
import type { Migration } from 'kysely';
import type { Feature } from '../platform/feature.ts';
import type { AppContext } from '../platform/context.ts';
import { errors } from '../platform/errors.ts';
import { createUser } from '../accounts/users.ts';
import { UserSchema } from '#wire/user.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';

const admin = { admin: true } as const;
const security = [{ admin: [] }];

/** What the operator API is built from: the platform, and every migration (`POST /api/admin/migrate`). */
export interface AdminDeps extends AppContext {
  migrations: Record<string, Migration>;
}

/**
 * The operator API's own routes (decisions.md "Operator API"): users, migrations and cron jobs. Other
 * features add their operator routes (credits, apps, models, ledger) beside their own code.
 */
export function createAdminFeature(ctx: AdminDeps): Feature {
  return {
    name: 'admin',
    register(app) {
      app.post(
        '/api/admin/users',
        {
          schema: {
            tags: ['admin'],
            summary: 'Create a user',
            security,
            body: Type.Object({
              email: Type.String({ maxLength: 320 }),
              name: Type.Optional(Type.String({ maxLength: 200 })),
              password: Type.String({ minLength: 8, maxLength: 1024 }),
            }),
            response: { 201: UserSchema },
          },
          config: admin,
        },
        async (request, reply) => reply.code(201).send(await createUser(ctx.db, ctx.clock, request.body as any)),
      );

      app.post(
        '/api/admin/migrate',
        {
          schema: {
            tags: ['admin'],
            summary: 'Apply pending migrations',
            security,
            response: {
              200: Type.Object({
                applied: Type.Array(Type.String(), { description: 'The migrations applied now, in order.' }),
              }),
            },
          },
          config: admin,
        },
        async () => {
          const result = await migrateToLatest(ctx.db, ctx.migrations, ctx.config);
          return { applied: (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
        },
      );

      app.get(
        '/api/admin/cron',
        {
          schema: {
            tags: ['admin'],
            summary: 'List the cron jobs',
            security,
            response: {
              200: Type.Object({ jobs: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })) }),
            },
          },
          config: admin,
        },
        async () => ({
          jobs: [...ctx.jobs.values()].map((job) => ({ name: job.name, description: job.description })),
        }),
      );

      app.post(
        '/api/admin/cron/:job',
        {
          schema: {
            tags: ['admin'],
            summary: 'Run a cron job now',
            security,
            params: Type.Object({ job: Type.String({ maxLength: 100 }) }),
            response: {
              200: Type.Object({
                job: Type.String(),
                // Each job reports its own counts (what it released, deleted, sent): an object, its keys the job's.
                result: Type.Record(Type.String(), Type.Unknown(), {
                  description: "What the run did, in the job's own terms.",
                }),
              }),
            },
          },
          config: admin,
        },
        async (request) => {
          const job = ctx.jobs.get((request.params as { job: string }).job);
          if (!job) throw errors.notFound('Job');
          return { job: job.name, result: await job.run() };
        },
      );
    },
  };
}
