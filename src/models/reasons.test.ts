import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, selectedDatabases, TestDatabaseSpace } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { putModel } from '../gateway/testing.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { loadConfig } from '../config.ts';
import { allMigrations } from '../features.ts';

/**
 * The catalogue's `reasons` (does the model take a reasoning effort?): its defaults from a provider's `/models`
 * list (OpenRouter's `supported_parameters`) or the model family, the operator's choice through the admin API and
 * a sync that keeps it, and the migration that gives existing models their family's default.
 */
const priced = { prompt: '0.000001', completion: '0.000002' };
const mock = await startMockUpstream({
  models: [
    // The list says it: `reasoning` or `reasoning_effort` among the parameters, whatever the name.
    { id: 'acme/thinker', pricing: priced, supported_parameters: ['max_tokens', 'reasoning', 'include_reasoning'] },
    { id: 'acme/effort', pricing: priced, supported_parameters: ['reasoning_effort', 'temperature'] },
    // A list without them says no, even for a family that reasons.
    { id: 'deepseek/deepseek-r1', pricing: priced, supported_parameters: ['max_tokens', 'temperature'] },
    // The list says nothing: the family decides.
    { id: 'openai/gpt-5', pricing: priced },
    { id: 'openai/gpt-5-chat', pricing: priced },
    { id: 'openai/gpt-4o', pricing: priced },
    { id: 'openai/o1-mini', pricing: priced },
    { id: 'openai/o3', pricing: priced },
    { id: 'anthropic/claude-3.7-sonnet', pricing: priced },
    { id: 'anthropic/claude-3.5-sonnet', pricing: priced },
    { id: 'anthropic/claude-fable-5', pricing: priced },
    { id: 'google/gemini-2.5-flash', pricing: priced },
    { id: 'google/gemini-2.0-flash-001', pricing: priced },
    { id: 'google/gemini-2.5-flash-image', pricing: priced },
    { id: 'google/gemini-2.5-flash-preview-tts', pricing: priced },
  ],
});
after(() => mock.close());

const EXPECTED: Record<string, boolean> = {
  'acme/thinker': true,
  'acme/effort': true,
  'deepseek/deepseek-r1': false,
  'openai/gpt-5': true,
  'openai/gpt-5-chat': false,
  'openai/gpt-4o': false,
  'openai/o1-mini': false,
  'openai/o3': true,
  'anthropic/claude-3.7-sonnet': true,
  'anthropic/claude-3.5-sonnet': false,
  'anthropic/claude-fable-5': true,
  'google/gemini-2.5-flash': true,
  'google/gemini-2.0-flash-001': false,
  'google/gemini-2.5-flash-image': false,
  'google/gemini-2.5-flash-preview-tts': false,
};

describeEachDatabase(
  'the catalogue says which models reason',
  (env) => {
    const adminModels = async (): Promise<Record<string, any>> =>
      Object.fromEntries((await env.admin('GET', '/api/admin/models')).body.data.map((m: any) => [m.id, m]));
    const sync = async () => assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);

    it("a sync sets reasons from the list's supported_parameters when it has them, else by model family, as a default (reasonsByOperator false)", async () => {
      await sync();
      const models = await adminModels();
      for (const [id, reasons] of Object.entries(EXPECTED)) {
        assert.equal(models[id].reasons, reasons, id);
        assert.equal(models[id].reasonsByOperator, false, id);
      }
    });

    it("a sync keeps the operator's reasons, and refreshes a default; a PUT that leaves reasons out keeps the default a sync found", async () => {
      await sync();
      const put = (id: string, upstreamModel: string, extra: Record<string, unknown> = {}) =>
        putModel(env, id, { provider: 'openrouter', upstreamModel, pricing: { prompt: 1, completion: 2 }, ...extra });
      assert.equal((await put('openai/gpt-4o', 'openai/gpt-4o', { reasons: true })).reasons, true);
      assert.equal((await put('openai/gpt-5', 'openai/gpt-5', { reasons: false })).reasons, false);
      // The list says acme/thinker reasons (its name does not): a PUT of its price leaves that default.
      const repriced = await put('acme/thinker', 'acme/thinker');
      assert.deepEqual([repriced.reasons, repriced.reasonsByOperator], [true, false]);
      await sync();
      let models = await adminModels();
      assert.deepEqual([models['openai/gpt-4o'].reasons, models['openai/gpt-4o'].reasonsByOperator], [true, true]);
      assert.deepEqual([models['openai/gpt-5'].reasons, models['openai/gpt-5'].reasonsByOperator], [false, true]);
      assert.equal(models['acme/thinker'].reasons, true);
      // Cleared, the choice is the operator's no more: the family's default at once, the list's at the next sync.
      const cleared = await put('openai/gpt-4o', 'openai/gpt-4o', { reasons: null });
      assert.deepEqual([cleared.reasons, cleared.reasonsByOperator], [false, false]);
      await put('openai/gpt-5', 'openai/gpt-5', { reasons: null });
      await sync();
      models = await adminModels();
      for (const id of ['openai/gpt-4o', 'openai/gpt-5']) {
        assert.equal(models[id].reasons, EXPECTED[id], id);
        assert.equal(models[id].reasonsByOperator, false, id);
      }
    });

    it('PUT sets reasons (true, false), clears it (null or omitted: the family default), and refuses anything else with a 400 naming it, changing nothing', async () => {
      const put = (upstreamModel: string, extra: Record<string, unknown> = {}) =>
        putModel(env, 'acme/custom', { provider: 'openai', upstreamModel, pricing: { prompt: 1 }, ...extra });
      const shown = async () => (await adminModels())['acme/custom'];
      assert.deepEqual([(await put('my-model', { reasons: true })).reasons, (await shown()).reasons], [true, true]);
      assert.equal((await shown()).reasonsByOperator, true);
      assert.equal((await put('gpt-5-mini', { reasons: false })).reasons, false);
      for (const [upstreamModel, reasons] of [
        ['my-model', false],
        ['gpt-4.1', false],
        ['gpt-5-mini', true],
        ['gpt-oss-120b', true],
        ['claude-sonnet-4-5', true],
        ['deepseek-reasoner', true],
      ] as const) {
        const omitted = await put(upstreamModel);
        assert.deepEqual([omitted.reasons, omitted.reasonsByOperator], [reasons, false], upstreamModel);
        assert.equal((await put(upstreamModel, { reasons: null })).reasons, reasons, upstreamModel);
      }
      await put('my-model', { reasons: true });
      for (const value of ['"true"', '1', '0', '"yes"', '{}', '[]']) {
        const response = await env.request('PUT', '/api/admin/models/acme/custom', {
          token: env.adminToken,
          headers: { 'content-type': 'application/json' },
          raw: `{"provider":"openai","upstreamModel":"my-model","pricing":{"prompt":1},"reasons":${value}}`,
        });
        assert.equal(response.status, 400, `reasons=${value}: ${response.text}`);
        assert.equal(response.body.error.code, 'INVALID_REQUEST');
        assert.match(response.body.error.message, /reasons/);
      }
      assert.deepEqual([(await shown()).reasons, (await shown()).reasonsByOperator], [true, true]);
    });
  },
  { config: { OPENROUTER_BASE_URL: `${mock.url}/v1`, OPENROUTER_API_KEY: 'sk-or-test' } },
);

/** The migration that added `reasons`. */
const MIGRATION = '1840_models_reasons';

for (const kind of selectedDatabases()) {
  describe(`upgrading a ${kind} catalogue to reasons`, () => {
    const space = new TestDatabaseSpace(kind);
    after(() => space.drop());

    it("gives each existing model its family's default, as no operator's choice", async () => {
      await space.create();
      const config = loadConfig({
        ...space.env(),
        LOG_LEVEL: 'silent',
        SWEEP_INTERVAL_SECONDS: '0',
        REPLICATE_WEBHOOK_SECRET: '',
      });
      const all = allMigrations();
      const before = Object.fromEntries(Object.entries(all).filter(([name]) => name < MIGRATION));
      const database = openDatabase(config);
      try {
        await migrateToLatest(database.db, before, config);
        const db = database.db as any;
        const upstream: Record<string, boolean> = {
          'o3-mini': true,
          'openai/gpt-5.1': true,
          'gpt-5-chat-latest': false,
          'gpt-4o': false,
          'claude-opus-4-1': true,
          'llama-3.1-70b': false,
        };
        for (const [index, upstreamModel] of Object.keys(upstream).entries())
          await db
            .insertInto('models')
            .values({ id: `up/m${index}`, provider: 'openai', upstream_model: upstreamModel, name: 'M', updated_at: 0 })
            .execute();
        await migrateToLatest(database.db, all, config);
        const rows = await db
          .selectFrom('models')
          .select(['upstream_model', 'reasons', 'reasons_by_operator'])
          .where('id', 'like', 'up/%')
          .execute();
        assert.equal(rows.length, Object.keys(upstream).length);
        for (const row of rows) {
          assert.equal(Number(row.reasons), upstream[row.upstream_model] ? 1 : 0, row.upstream_model);
          assert.equal(Number(row.reasons_by_operator), 0, row.upstream_model);
        }
      } finally {
        await database.close();
      }
    });
  });
}
