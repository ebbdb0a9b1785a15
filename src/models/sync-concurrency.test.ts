import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeEachDatabase } from '../testing/harness.ts';
import { putModel } from '../gateway/testing.ts';

/**
 * An OpenAI-compatible upstream whose `/v1/models` answer waits at a gate the test opens: a provider's list
 * can take seconds (up to UPSTREAM_TIMEOUT_MS), during which an operator, on this instance or another, edits
 * the catalogue.
 */
class GatedModels {
  server: Server = createServer((req, res) => {
    if (req.url !== '/v1/models') return void res.writeHead(404).end();
    this.asked.resolve();
    void this.open.promise.then(() =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'gated-model', object: 'model' }] })),
    );
  });
  asked = Promise.withResolvers<void>();
  open = Promise.withResolvers<void>();
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }
  close(): void {
    this.asked = Promise.withResolvers<void>();
    this.open = Promise.withResolvers<void>();
  }
}

const upstream = new GatedModels();
await upstream.start();
after(() => upstream.server.close());

describeEachDatabase(
  'models/sync beside an operator editing the catalogue',
  (env) => {
    before(async () => {
      // The first sync imports the unpriced model, disabled.
      upstream.open.resolve();
      assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);
      const imported = (await env.admin('GET', '/api/admin/models')).body.data.find(
        (m: { id: string }) => m.id === 'openai/gated-model',
      );
      assert.equal(imported.enabled, false);
    });

    it("an operator's price, output cap and enabled flag set while a sync waits for the provider's list are kept", async () => {
      upstream.close();
      const sync = env.admin('POST', '/api/admin/models/sync');
      await upstream.asked.promise;
      await putModel(env, 'openai/gated-model', {
        provider: 'openai',
        upstreamModel: 'gated-model',
        pricing: { request: 1 },
        maxOutputTokens: 32,
        enabled: true,
      });
      upstream.open.resolve();
      const report = await sync;
      assert.equal(report.status, 200, report.text);
      // Priced and enabled meanwhile: it no longer waits for a price.
      assert.deepEqual(report.body.providers[0].needsPricing, []);
      const model = (await env.admin('GET', '/api/admin/models')).body.data.find(
        (m: { id: string }) => m.id === 'openai/gated-model',
      );
      // The sync read the model before the operator's edit: written from that copy, it disabled the model and
      // put its price back to 0 and its output cap to none.
      assert.deepEqual(
        { enabled: model.enabled, request: model.pricing.request, maxOutputTokens: model.maxOutputTokens },
        { enabled: true, request: 1, maxOutputTokens: 32 },
      );
    });
  },
  { config: { OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-test' } },
);
