import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { chromiumForSuite } from './browser.ts';

describeEachDatabase('dashboard sign-up with an email that has an account', (env) => {
  const browser = chromiumForSuite();

  test('a signed-out visit shows the sign-in form and logs no console error (the session check is a 200)', async () => {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    const logged: string[] = [];
    page.on('console', (message) => void (message.type() === 'error' && logged.push(message.text())));
    await page.goto(`${env.baseUrl}/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.waitForLoadState('networkidle');
    assert.deepEqual(logged, []);
    await page.context().close();
  });

  test('the dashboard asks to sign in instead, and signing in with the real password works', async () => {
    const owner = await env.createUser();
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/`);
    await page.getByRole('button', { name: 'Create an account' }).click();
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('some other password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('If this email already has an account, sign in with its password.').waitFor();
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Wallet' }).waitFor();
  });
});
