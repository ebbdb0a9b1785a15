import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { spawnSync } from 'node:child_process';
import { fundedUser, usageOf, wallet } from '../gateway/testing.ts';

const chat = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'count these words please' }] };

/** The value of the first metric line that starts with `prefix` and contains every label of `labels`. */
function metricValue(text: string, prefix: string, ...labels: string[]): number {
  const line = text.split('\n').find((l) => l.startsWith(prefix) && labels.every((label) => l.includes(label)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describeEachDatabase(
  'metrics of AI calls, refusals and webhooks',
  (env) => {
    it('count tokens, credits charged, gateway overhead, refusals by code and webhook deliveries by outcome', async () => {
      const user = await fundedUser(env, 1);
      assert.equal(
        (await env.request('POST', '/api/v1/chat/completions', { token: user.key, body: chat })).status,
        200,
      );
      await usageOf(env, user);
      const broke = await fundedUser(env, 0);
      assert.equal(
        (await env.request('POST', '/api/v1/chat/completions', { token: broke.key, body: chat })).status,
        402,
      );
      assert.equal(
        (
          await env.request('POST', '/api/webhooks/replicate', {
            raw: '{}',
            headers: { 'content-type': 'application/json' },
          })
        ).status,
        503,
      );

      const metrics = (await env.request('GET', '/metrics', { token: env.adminToken })).text;
      assert.ok(metricValue(metrics, 'tollgate_tokens_total{', 'model="tollgate/echo"', 'direction="prompt"') > 0);
      assert.ok(metricValue(metrics, 'tollgate_tokens_total{', 'direction="completion"') > 0);
      // Exactly what the wallet lost, in integer micro-credits (a float sum of credits drifted: 0.000005999…).
      const spent = 1_000_000 - (await wallet(env, user)).balance;
      assert.ok(spent > 0);
      assert.equal(metricValue(metrics, 'tollgate_credits_charged_micros_total{', 'kind="chat"'), spent);
      assert.ok(metricValue(metrics, 'tollgate_gateway_overhead_seconds_count{', 'kind="chat"') >= 1);
      assert.ok(metricValue(metrics, 'tollgate_upstream_duration_seconds_count{', 'provider="echo"') >= 1);
      // A reasoning model's wait of minutes lands in a bucket of its own, not only in +Inf.
      for (const le of ['60', '300', '600'])
        assert.match(
          metrics,
          new RegExp(`^tollgate_upstream_duration_seconds_bucket\\{le="${le}",provider="echo"`, 'm'),
        );
      assert.equal(metricValue(metrics, 'tollgate_restriction_refusals_total{', 'code="INSUFFICIENT_CREDITS"'), 1);
      assert.equal(metricValue(metrics, 'tollgate_webhook_deliveries_total{', 'outcome="unconfigured"'), 1);
      assert.match(metrics, /^tollgate_holds_open 0$/m);
    });

    it('/metrics passes `promtool check metrics` without a warning: no gauge named _total, no doubled prefix', async () => {
      const metrics = (await env.request('GET', '/metrics', { token: env.adminToken })).text;
      assert.match(metrics, /^tollgate_process_cpu_seconds_total /m);
      assert.doesNotMatch(metrics, /tollgate_process_process_|tollgate_process_nodejs_/);
      // No silent skip: CI installs Debian's `prometheus` package for promtool (.ci/run).
      const promtool = spawnSync('promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
      if (promtool.error) assert.fail(`promtool is missing (apt-get install prometheus): ${promtool.error.message}`);
      assert.equal(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`);
      assert.equal(`${promtool.stdout}${promtool.stderr}`.trim(), '');
    });

    it('the tokens-per-minute limit answers 429 RATE_LIMITED, not a spending limit, once a key used its tokens this minute', async () => {
      const user = await fundedUser(env, 5);
      assert.equal(
        (await env.request('POST', '/api/v1/chat/completions', { token: user.key, body: chat })).status,
        200,
      );
      await usageOf(env, user);
      const limited = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body: chat });
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error.code, 'RATE_LIMITED');
      assert.equal(limited.body.error.type, 'rate_limit_error');
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    });
    // A held clock, so both calls fall in one minute window whenever the test runs.
  },
  { config: { RATE_LIMIT_KEY_TPM: 5 }, manualClock: true },
);

describeEachDatabase('CORS', (env) => {
  it('admits the origin of a registered redirect URI on the API, without credentials, and no other origin', async () => {
    const app = await env.admin('POST', '/api/admin/apps', {
      name: 'Browser app',
      redirectUris: ['http://127.0.0.1:5173/callback'],
      scopes: ['read'],
      type: 'public',
    });
    assert.equal(app.status, 201, app.text);
    const preflight = await env.request('OPTIONS', '/api/v1/chat/completions', {
      headers: { origin: 'http://127.0.0.1:5173', 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://127.0.0.1:5173');
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /authorization/);
    assert.equal(preflight.headers.get('access-control-allow-credentials'), null);
    // What the official SDKs add in a browser is allowed, so their preflight passes; a malformed name is not echoed.
    const sdk = await env.request('OPTIONS', '/api/v1/messages', {
      headers: {
        origin: 'http://127.0.0.1:5173',
        'access-control-request-method': 'POST',
        'access-control-request-headers':
          'anthropic-beta,anthropic-dangerous-direct-browser-access,anthropic-version,content-type,x-api-key,x-stainless-lang,bad name',
      },
    });
    assert.equal(sdk.status, 204);
    const allowed = (sdk.headers.get('access-control-allow-headers') ?? '').split(', ');
    for (const name of [
      'x-api-key',
      'anthropic-version',
      'anthropic-beta',
      'anthropic-dangerous-direct-browser-access',
    ])
      assert.ok(allowed.includes(name), `${name} in ${allowed}`);
    assert.ok(allowed.includes('x-stainless-lang') && allowed.includes('authorization'));
    assert.equal(allowed.includes('bad name'), false);
    const stranger = await env.request('GET', '/api/user/me', { headers: { origin: 'http://evil.example' } });
    assert.equal(stranger.headers.get('access-control-allow-origin'), null);
  });
});
