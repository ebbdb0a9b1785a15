import Type from 'typebox';
import type { Feature } from '../platform/feature.ts';
import { errors } from '../platform/errors.ts';
import { createUser } from '../accounts/users.ts';
import { UserSchema } from '#wire/user.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { allMigrations } from '../features.ts';

const admin = { admin: true } as const;
const security = [{ admin: [] }];

/**
 * The operator API's own routes (decisions.md "Operator API"): users, migrations and cron jobs. Other
 * features add their operator routes (credits, apps, models, ledger) beside their own code.
 */
export const adminFeature: Feature = {
  name: 'admin',
  register(app, ctx) {
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
      { schema: { tags: ['admin'], summary: 'Apply pending migrations', security }, config: admin },
      async () => {
        const result = await migrateToLatest(ctx.db, allMigrations(), ctx.config);
        return { applied: (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
      },
    );

    app.get(
      '/api/admin/cron',
      { schema: { tags: ['admin'], summary: 'List the cron jobs', security }, config: admin },
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
        },
        config: admin,
      },
      async (request) => {
        const job = ctx.jobs.get((request.params as { job: string }).job);
        if (!job) throw errors.notFound('Job');
        return { job: job.name, result: await job.run(ctx) };
      },
    );
  },
};
