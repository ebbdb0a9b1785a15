import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { TestDatabaseSpace, selectedDatabases } from '../testing/harness.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../config.ts';
import { allMigrations } from '../features.ts';
import { createBilling } from './service.ts';
import { authorizeApp, insertApiKey, insertUser } from './testing/fixtures.ts';

/** The statements a hold of an app and a key, neither with a weekly limit, runs on SQLite (measured before weekly limits). */
const PLAIN_HOLD_STATEMENTS_SQLITE = 7;

/** Counts the queries run through it (each execution passes its result through the plugin once). */
class QueryCount implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count += 1;
    return args.result;
  }
}

/** Collects the SQL text of every query run through it. */
class SqlTexts implements KyselyPlugin {
  readonly texts = new Set<string>();
  readonly #compile: (node: RootOperationNode) => string;
  constructor(compile: (node: RootOperationNode) => string) {
    this.#compile = compile;
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.texts.add(this.#compile(args.node));
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

// SQLite keeps each prepared statement by its text, and PostgreSQL plans by it: a text that carried an amount
// (as the settle's capture once did) made every settle of a new amount compile a new statement.
for (const kind of selectedDatabases()) {
  describe(`billing's SQL on ${kind}`, () => {
    const space = new TestDatabaseSpace(kind);
    after(() => space.drop());

    it('depends on the shape of a movement, never on its amounts', async () => {
      await space.create();
      const config = loadConfig({ ...space.env(), LOG_LEVEL: 'warn', REPLICATE_WEBHOOK_SECRET: '' });
      const database = openDatabase(config);
      try {
        await migrateToLatest(database.db, allMigrations(), config);
        const texts = new SqlTexts((node) => database.db.getExecutor().compileQuery(node, { queryId: 'texts' }).sql);
        const ctx = { db: database.db.withPlugin(texts), dialect: database.dialect, clock: systemClock, config } as any;
        const billing = createBilling(ctx);
        const userId = await insertUser(ctx);
        const keyId = await insertApiKey(ctx, userId, { limit: 1_000_000_000, period: 'daily' });
        await billing.grant(userId, 1_000_000_000, 'test');
        // Each shape once: a partial capture, a full one, none (a release), and a release.
        const round = async (scale: number) => {
          for (const [amount, actual] of [
            [1_000, 400],
            [1_000, 5_000],
            [1_000, 0],
          ]) {
            const { holdId } = await billing.placeHold({ userId, appId: null, keyId, amount: amount * scale });
            await billing.settleHold(holdId, actual * scale + (scale % 7), { userId });
          }
          const { holdId } = await billing.placeHold({ userId, appId: null, keyId, amount: 777 * scale });
          await billing.releaseHold(holdId, { userId });
        };
        await round(1);
        const shapes = texts.texts.size;
        for (const scale of [3, 11, 29, 101]) await round(scale);
        assert.equal(texts.texts.size, shapes, `new SQL texts: ${[...texts.texts].slice(shapes).join('\n')}`);
        assert.equal((await billing.verify()).ok, true);
      } finally {
        await database.close();
      }
    });

    // Issue 18: weekly limits have no counter of their own; only a hold whose subject has one reads its days.
    it('a hold without a weekly limit runs the statements it always did; a weekly limit adds one read on SQLite, none on PostgreSQL', async () => {
      const config = loadConfig({ ...space.env(), LOG_LEVEL: 'warn', REPLICATE_WEBHOOK_SECRET: '' });
      const database = openDatabase(config);
      try {
        const queries = new QueryCount();
        const ctx = {
          db: database.db.withPlugin(queries),
          dialect: database.dialect,
          clock: systemClock,
          config,
        } as any;
        const billing = createBilling(ctx);
        const userId = await insertUser(ctx);
        const appId = await authorizeApp(ctx, userId, { daily: 1_000_000_000, monthly: 1_000_000_000 });
        const dailyKey = await insertApiKey(ctx, userId, { limit: 1_000_000_000, period: 'daily' });
        const weeklyKey = await insertApiKey(ctx, userId, { limit: 1_000_000_000, period: 'weekly' });
        await billing.grant(userId, 1_000_000_000, 'test');
        const place = async (keyId: string) => {
          queries.count = 0;
          await billing.placeHold({ userId, appId, keyId, amount: 1_000 });
          return queries.count;
        };
        await place(dailyKey);
        // The figures of the code before weekly limits (SQLite: the wallet lock, the limits with their counters,
        // the hold's writes; PostgreSQL: the one function call).
        assert.equal(await place(dailyKey), kind === 'sqlite' ? PLAIN_HOLD_STATEMENTS_SQLITE : 1);
        assert.equal(await place(weeklyKey), kind === 'sqlite' ? PLAIN_HOLD_STATEMENTS_SQLITE + 1 : 1);
      } finally {
        await database.close();
      }
    });
  });
}
