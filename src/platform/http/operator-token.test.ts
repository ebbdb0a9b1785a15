import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

/**
 * The operator token (`Authorization: Bearer <TOLLGATE_ADMIN_TOKEN>`, decisions.md "Operator API") is read as
 * the user-facing routes read theirs: HTTP's Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1,
 * RFC 6750 §2.1), and a 401 that carries the challenge HTTP requires (RFC 9110 §11.6.1, RFC 6750 §3).
 */
describeEachDatabase('the operator token on /api/admin/* and /metrics', (env) => {
  it('is matched whatever the case of the Bearer scheme, with one or more spaces before the token', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer', 'bEaReR  ']) {
      const headers = { authorization: `${scheme} ${env.adminToken}` };
      const cron = await env.request('GET', '/api/admin/cron', { headers });
      assert.equal(cron.status, 200, `${JSON.stringify(scheme)}: ${cron.text}`);
      assert.ok(Array.isArray(cron.body.jobs));
      const metrics = await env.request('GET', '/metrics', { headers });
      assert.equal(metrics.status, 200, `${JSON.stringify(scheme)}: ${metrics.text}`);
    }
  });

  it('answers a 401 with the Bearer challenge: invalid_request for a malformed header, invalid_token for a refused token', async () => {
    const user = await fundedUser(env, 0);
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no credential', {}, 'Bearer realm="tollgate"'],
      [
        'another scheme',
        { authorization: `Basic ${env.adminToken}` },
        'Bearer realm="tollgate", error="invalid_request"',
      ],
      ['no space', { authorization: `Bearer${env.adminToken}` }, 'Bearer realm="tollgate", error="invalid_request"'],
      [
        'a wrong token',
        { authorization: 'Bearer not-the-operator-token' },
        'Bearer realm="tollgate", error="invalid_token"',
      ],
      // A user's API key is never an operator credential (decisions.md).
      ['a user API key', { authorization: `Bearer ${user.key}` }, 'Bearer realm="tollgate", error="invalid_token"'],
    ];
    for (const path of ['/api/admin/cron', '/metrics']) {
      for (const [what, headers, challenge] of cases) {
        const answer = await env.request('GET', path, { headers });
        assert.equal(answer.status, 401, `${what} ${path}: ${answer.text}`);
        assert.equal(answer.headers.get('www-authenticate'), challenge, `${what} ${path}`);
        assert.equal(answer.body.error.code, 'UNAUTHENTICATED', `${what} ${path}`);
      }
    }
  });
});
