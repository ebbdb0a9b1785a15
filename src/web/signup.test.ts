import { test } from 'node:test';
import { describeEachDatabase } from '../testing/harness.ts';
import { chromiumForSuite } from './browser.ts';

describeEachDatabase('dashboard sign-up with an email that has an account', (env) => {
  const browser = chromiumForSuite();

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
