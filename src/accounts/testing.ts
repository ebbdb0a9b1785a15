import assert from 'node:assert/strict';
import type { TestEnv } from '../testing/harness.ts';
import { randomText } from '../platform/ids.ts';

/** The production sign-in throttle, spelled out (the harness relaxes the per-address one for other suites). */
export const PRODUCTION_THROTTLE = {
  SIGNIN_FREE_FAILURES_PER_ACCOUNT: 5,
  SIGNIN_FREE_FAILURES_PER_ADDRESS: 20,
  SIGNIN_MAX_DELAY_SECONDS: 900,
};

/** A fresh account made through the operator API (no sign-in): its email and password. */
export async function newAccount(env: TestEnv, who = 'victim'): Promise<{ email: string; password: string }> {
  const email = `${who}-${randomText(10).toLowerCase()}@example.com`;
  const password = `pw-${randomText(16)}`;
  const created = await env.admin('POST', '/api/admin/users', { email, password, name: who });
  assert.equal(created.status, 201, created.text);
  return { email, password };
}
