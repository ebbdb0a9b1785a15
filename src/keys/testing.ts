import assert from 'node:assert/strict';
import type { DashboardSession, TestEnv } from '../testing/harness.ts';

/** A new dashboard user granted `credits` by the operator. */
export async function fundedSession(env: TestEnv, credits: number): Promise<DashboardSession> {
  const session = await env.createUser();
  const granted = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
    amount: credits,
    reason: 't',
  });
  assert.equal(granted.status, 200, granted.text);
  return session;
}

/** A key named "Editor" (unless `body` names it) created from the dashboard: its id and value. */
export async function createKey(env: TestEnv, session: DashboardSession, body: Record<string, unknown>) {
  const response = await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'Editor', ...body });
  assert.equal(response.status, 200, response.text);
  return response.body.apiKey as { id: string; key: string };
}
