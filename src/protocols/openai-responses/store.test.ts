import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';
import { fundedUser, wallet } from '../../gateway/testing.ts';

const DAY_MS = 86_400_000;

describeEachDatabase(
  'stored responses: bounded, kept per user and per app, expired after the retention',
  (env) => {
    const create = (token: string, body: Record<string, unknown>) =>
      env.request('POST', '/api/v1/responses', { token, body: { model: 'tollgate/echo', ...body } });

    it('a conversation larger than RESPONSES_STORE_MAX_BYTES is refused with store: true (413, nothing charged) and answered without it', async () => {
      const user = await fundedUser(env, 1);
      const long = 'word '.repeat(400);
      const refused = await create(user.key, { input: long, store: true });
      assert.equal(refused.status, 413, refused.text);
      assert.deepEqual([refused.body.error.code, refused.body.error.param], ['PAYLOAD_TOO_LARGE', 'store']);
      assert.match(refused.body.error.message, /RESPONSES_STORE_MAX_BYTES/);
      assert.equal((await wallet(env, user)).balance, 1_000_000);
      assert.equal((await create(user.key, { input: long })).status, 200);
    });

    it("an app's stored response is not the user's own keys' (and the reverse): 404 across apps", async () => {
      const user = await fundedUser(env, 1);
      const granted = await env.admin('POST', `/api/admin/users/${user.session.userId}/credits`, {
        amount: 1,
        reason: 'test',
      });
      assert.equal(granted.status, 200);
      const app = await authorizeForTest(env, { user: user.session });
      const byApp = await create(app.accessToken, { input: 'from the app', store: true });
      assert.equal(byApp.status, 200, byApp.text);
      const byKey = await create(user.key, { input: 'from my key', store: true });
      assert.equal(
        (await env.request('GET', `/api/v1/responses/${byApp.body.id}`, { token: app.accessToken })).status,
        200,
      );
      assert.equal((await env.request('GET', `/api/v1/responses/${byApp.body.id}`, { token: user.key })).status, 404);
      assert.equal(
        (await env.request('GET', `/api/v1/responses/${byKey.body.id}`, { token: app.accessToken })).status,
        404,
      );
      assert.equal((await create(user.key, { input: 'go on', previous_response_id: byApp.body.id })).status, 404);
      assert.equal(
        (await env.request('DELETE', `/api/v1/responses/${byApp.body.id}`, { token: user.key })).status,
        404,
      );
      assert.equal((await env.request('GET', '/api/v1/responses/not-an-id', { token: user.key })).status, 404);
    });

    it('a stored response is readable until RESPONSES_RETENTION_DAYS pass; the expire-responses job deletes it', async () => {
      const user = await fundedUser(env, 1);
      const stored = await create(user.key, { input: 'keep me', store: true, metadata: { topic: 'retention' } });
      assert.equal(stored.status, 200, stored.text);
      const read = await env.request('GET', `/api/v1/responses/${stored.body.id}`, { token: user.key });
      assert.equal(read.status, 200);
      assert.deepEqual(read.body.metadata, { topic: 'retention' });
      assert.deepEqual(read.body.output, stored.body.output);
      await env.manualClock.advance(2 * DAY_MS + 1);
      assert.equal((await env.request('GET', `/api/v1/responses/${stored.body.id}`, { token: user.key })).status, 404);
      const job = await env.admin('POST', '/api/admin/cron/expire-responses');
      assert.equal(job.status, 200, job.text);
      assert.ok(job.body.result.deleted >= 1, job.text);
      const left = await env.db.selectFrom('stored_responses').select('id').where('id', '=', stored.body.id).execute();
      assert.deepEqual(left, []);
    });
  },
  { manualClock: true, config: { RESPONSES_STORE_MAX_BYTES: 1024, RESPONSES_RETENTION_DAYS: 2 } },
);
