import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest } from './testing.ts';

describeEachDatabase("PATCH /api/user/authorized-apps/:clientId's fields", (env) => {
  it('an unknown field, in limits or beside it, is a 400 naming it and what is taken, as a key’s are; nothing changes', async () => {
    const session = await env.createUser();
    const { clientId } = await authorizeForTest(env, { user: session, dailyLimit: 1 });
    const cases: Array<[unknown, string, string]> = [
      [
        { limits: { bogus: 5 } },
        'limits.bogus',
        'Unknown field "limits.bogus"; limits takes daily, weekly, monthly, total',
      ],
      [
        { limits: { daily: 2, hourly: 5 } },
        'limits.hourly',
        'Unknown field "limits.hourly"; limits takes daily, weekly, monthly, total',
      ],
      [{ limits: { daily: 2 }, colour: 'red' }, 'colour', 'Unknown field "colour"; the body takes limits'],
    ];
    for (const [body, param, message] of cases) {
      const response = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, body);
      assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.equal(response.body.error.param, param);
      assert.equal(response.body.error.message, message);
    }
    // The schema's other refusals are as before.
    const negative = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {
      limits: { daily: -1 },
    });
    assert.equal(negative.body.error.message, 'Invalid body: limits/daily must be >= 0, or null');
    const missing = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.param, 'limits');
    const listed = (await env.dashboard(session, 'GET', '/api/user/authorized-apps')).body.apps[0];
    assert.equal(listed.limits.daily.limit, 1, 'nothing changed');
  });
});
