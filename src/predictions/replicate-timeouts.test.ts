import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeEachDatabase } from '../testing/harness.ts';
import { addReplicateModels, IMAGE_MODEL, userWithCredits, walletMicros } from './testing/scenario.ts';

/**
 * Replicate's calls wait as the chat path's do: the headers up to `UPSTREAM_TIMEOUT_MS`, a silence inside a body
 * up to `UPSTREAM_IDLE_TIMEOUT_MS` (one shared connection pool, providers/http.ts), not undici's global 300 s.
 * The stand-in below is a real HTTP server that answers a create slowly in one of two ways.
 */

const IDLE_TIMEOUT_MS = 300;
const TOKEN = 'r8_timeouts';

/** How the stand-in answers the next create: headers late, or the body cut by a silence. */
let behaviour: 'late-headers' | 'silent-body' = 'late-headers';
const open = new Set<ServerResponse>();
const replicate = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    const prediction = JSON.stringify({ id: `r${Date.now()}`, status: 'starting', output: null, metrics: {} });
    open.add(response);
    response.on('close', () => open.delete(response));
    if (behaviour === 'late-headers') {
      // Slower to begin than the idle timeout, well within the upstream deadline.
      setTimeout(() => response.writeHead(201, { 'content-type': 'application/json' }).end(prediction), 1_000);
      return;
    }
    // Headers and the first bytes at once, then a silence ten times the idle timeout before the rest.
    response.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(prediction) });
    response.write(prediction.slice(0, 10));
    setTimeout(() => response.end(prediction.slice(10)), IDLE_TIMEOUT_MS * 10);
  });
});
await new Promise<void>((resolve) => replicate.listen(0, '127.0.0.1', resolve));
const baseUrl = `http://127.0.0.1:${(replicate.address() as AddressInfo).port}/v1`;
after(async () => {
  for (const response of open) response.destroy();
  replicate.closeAllConnections();
  await new Promise((resolve) => replicate.close(resolve));
});

describeEachDatabase(
  'Replicate calls keep the configured upstream timeouts',
  (env) => {
    before(() => addReplicateModels(env));

    it('a Replicate answer silent past UPSTREAM_IDLE_TIMEOUT_MS mid-body is a 502 at once, nothing held or charged', async () => {
      behaviour = 'silent-body';
      const user = await userWithCredits(env, 100);
      const started = performance.now();
      const created = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse' },
      });
      const elapsed = performance.now() - started;
      assert.equal(created.status, 502, created.text);
      assert.equal(created.body.error.code, 'UPSTREAM_ERROR');
      assert.match(created.body.error.message, /UPSTREAM_IDLE_TIMEOUT_MS/);
      assert.ok(elapsed < IDLE_TIMEOUT_MS * 6, `answered after ${Math.round(elapsed)} ms`);
      assert.deepEqual(await walletMicros(env, user), { balance: 100_000_000, reserved: 0, available: 100_000_000 });
    });

    it('a Replicate answer whose headers come later than UPSTREAM_IDLE_TIMEOUT_MS, within UPSTREAM_TIMEOUT_MS, is read', async () => {
      behaviour = 'late-headers';
      const user = await userWithCredits(env, 100);
      const created = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse' },
      });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.status, 'starting');
    });
  },
  {
    config: {
      REPLICATE_BASE_URL: baseUrl,
      REPLICATE_API_TOKEN: TOKEN,
      UPSTREAM_TIMEOUT_MS: 10_000,
      UPSTREAM_IDLE_TIMEOUT_MS: IDLE_TIMEOUT_MS,
    },
  },
);
