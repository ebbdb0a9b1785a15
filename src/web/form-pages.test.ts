import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { chromiumForSuite, freshPage } from './browser.ts';

/** The text a screen reader reads after a field's name: the elements its `aria-describedby` names. */
function descriptionOf(field: Locator): Promise<string> {
  return field.evaluate((element) =>
    (element.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent?.trim() ?? '')
      .join(' '),
  );
}

/** From the demo app to the gateway's consent page, signing in on the gateway's own page on the way. */
async function openConsent(page: Page, user: { email: string; password: string }): Promise<void> {
  await page.getByRole('button', { name: 'Sign in with Tollgate' }).click();
  await page.getByRole('button', { name: 'Continue with Tollgate' }).click();
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Daily spending limit').waitFor();
}

describeEachDatabase('the server-rendered sign-up and consent pages, by keyboard and screen reader', (env) => {
  const browser = chromiumForSuite();

  const newPage = () => freshPage(browser);

  test('Enter in the consent page’s Daily spending limit field allows the app with that limit, never denies it', async () => {
    const user = await env.createUser();
    const page = await newPage();
    await page.goto(`${env.baseUrl}/demo/`);
    await openConsent(page, user);
    await page.getByLabel('Daily spending limit').fill('2.5');
    await page.getByLabel('Daily spending limit').press('Enter');
    await page.getByRole('region', { name: 'Chat' }).or(page.getByText('Sign-in did not finish')).first().waitFor();
    assert.equal(await page.getByText('Sign-in did not finish').count(), 0, 'Enter denied the app');
    const apps = await env.dashboard(user, 'GET', '/api/user/authorized-apps');
    assert.equal(apps.body.apps[0]?.limits.daily?.limit, 2.5);
    await page.context().close();
  });

  test('a refused daily limit is announced and tied to its field, and the typed value stays', async () => {
    const user = await env.createUser();
    const page = await newPage();
    await page.goto(`${env.baseUrl}/demo/`);
    await openConsent(page, user);
    const field = page.getByLabel('Daily spending limit');
    assert.equal(await field.getAttribute('aria-invalid'), null);
    await field.fill('1.2.3');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await field.inputValue(), '1.2.3');
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    const alert = (await page.getByRole('alert').textContent())!.trim();
    assert.match(alert, /daily spending limit/i);
    assert.ok(
      (await descriptionOf(field)).includes(alert),
      `the field is described by "${await descriptionOf(field)}"`,
    );
    await page.context().close();
  });

  test('a refused sign-up keeps the name and email typed, and ties the message to the field it is about', async () => {
    const page = await newPage();
    await page.goto(`${env.baseUrl}/signup`);
    await page.getByLabel('Name').fill('Ada Lovelace');
    // The browser takes `ada@localhost` as an email; the server wants a domain with a dot.
    await page.getByLabel('Email').fill('ada@localhost');
    await page.getByLabel('Password').fill('a-long-password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByLabel('Name').inputValue(), 'Ada Lovelace');
    assert.equal(await page.getByLabel('Email').inputValue(), 'ada@localhost');
    const alert = (await page.getByRole('alert').textContent())!.trim();
    assert.equal(alert, 'Enter a valid email address.');
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    assert.equal(await descriptionOf(page.getByLabel('Email')), alert);
    assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), null);
    await page.context().close();
  });
});
