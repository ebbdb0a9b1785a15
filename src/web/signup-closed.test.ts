import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizationRequest, registerTestApp } from '../oauth/testing.ts';
import { chromiumForSuite, freshPage } from './browser.ts';

const NO_ACCOUNT = 'New here? Ask the operator of this service for an account.';

describeEachDatabase(
  'no way to sign up while the operator keeps sign-up closed, in Chromium',
  (env) => {
    const browser = chromiumForSuite();

    const newPage = () => freshPage(browser);

    test('the dashboard offers only sign-in (even at #signup), says to ask the operator, and signs an operator-made user in', async () => {
      const user = await env.createUser();
      const page = await newPage();
      const logged: string[] = [];
      page.on('console', (message) => void (message.type() === 'error' && logged.push(message.text())));
      for (const path of ['/', '/#signup']) {
        await page.goto(`${env.baseUrl}${path}`);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await page.getByText(NO_ACCOUNT).waitFor();
        assert.equal(await page.getByText('Create an account').count(), 0, path);
        assert.equal(await page.getByRole('heading', { name: 'Create your account' }).count(), 0, path);
      }
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Wallet' }).waitFor();
      assert.deepEqual(logged, []);
      await page.context().close();
    });

    test('an app’s sign-in page has no "Create an account" link, and a sign-up link kept from before says sign-up is closed', async () => {
      const app = await registerTestApp(env, { name: 'Private Notes', scopes: ['read'] });
      const page = await newPage();
      await page.goto((await authorizationRequest(env, app, ['read'])).url.href);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByText('Private Notes').waitFor();
      await page.getByText(NO_ACCOUNT).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Create an account' }).count(), 0);
      assert.equal(await page.locator('a[href*="signup"]').count(), 0);

      const interaction = new URL(page.url()).pathname;
      await page.goto(`${env.baseUrl}/signup?return_to=${encodeURIComponent(interaction)}`);
      await page.getByRole('heading', { name: 'Sign-up is closed' }).waitFor();
      await page.getByText('its operator creates the accounts. Ask them for one, then sign in.').waitFor();
      assert.equal(await page.getByLabel('Password').count(), 0, 'no form to fill');
      // Its "Sign in" goes back to the same authorization's sign-in page.
      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.pathname === '/signin');
      assert.equal(await page.locator('input[name="return_to"]').inputValue(), interaction);
      await page.context().close();
    });
  },
  { config: { SIGNUP: 'closed' } },
);
