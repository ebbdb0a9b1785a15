import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite, startOtherOriginPage } from '../web/browser.ts';
import { interactionUid, newEmail, registerTestApp, signUp, startSignIn } from './testing.ts';

/**
 * An app that asks for a fresh sign-in (`prompt=login`, `max_age`) and a person who creates their account from its
 * sign-in page: the sign-up is that sign-in, and nothing else is.
 */
describeEachDatabase('a sign-up from an app’s sign-in page as the fresh sign-in it asked for, in Chromium', (env) => {
  const browser = chromiumForSuite();
  let appSite: { origin: string; close(): Promise<void> };
  before(async () => {
    appSite = await startOtherOriginPage('Back at the app');
  });
  after(() => appSite?.close());

  async function newPage(): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    return page;
  }

  const account = () => ({ email: newEmail(), password: 'a long new password' });
  const openidApp = (path: string) =>
    registerTestApp(env, {
      name: 'Careful App',
      scopes: ['openid', 'read'],
      redirectUris: [`${appSite.origin}/callback/${path}`],
    });

  /** Allows on the consent page, and the app finishes as openid-client does; answers the ID token's claims. */
  async function allowAndFinish(page: Page, signIn: Awaited<ReturnType<typeof startSignIn>>, maxAge?: number) {
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.origin === appSite.origin);
    const tokens = await client.authorizationCodeGrant(signIn.config, new URL(page.url()), {
      pkceCodeVerifier: signIn.codeVerifier,
      expectedState: signIn.state,
      expectedNonce: signIn.nonce,
      idTokenExpected: true,
      ...(maxAge === undefined ? {} : { maxAge }),
    });
    const claims = tokens.claims()!;
    const me = await env.request('GET', '/api/user/me', { token: tokens.access_token });
    return { claims, email: me.body.email as string };
  }

  it('prompt=login: an account made through "Create an account" goes straight on to consent, auth_time the sign-up’s', async () => {
    const app = await openidApp('prompt-login');
    const signIn = await startSignIn(env, app, ['openid', 'read'], { prompt: 'login' });
    const page = await newPage();
    await page.goto(signIn.url.href);
    await page.getByRole('link', { name: 'Create an account' }).click();
    const newcomer = account();
    const signedUpAt = Math.floor(Date.now() / 1000);
    await signUp(page, newcomer);

    // No second password: the consent page names the new account.
    await page.getByText(`Signed in as ${newcomer.email}`).waitFor();
    const { claims, email } = await allowAndFinish(page, signIn);
    assert.equal(email, newcomer.email);
    assert.ok(
      claims.auth_time! >= signedUpAt && claims.auth_time! <= Math.ceil(Date.now() / 1000),
      `auth_time ${claims.auth_time} is the sign-up (${signedUpAt})`,
    );
    await page.context().close();
  });

  it('max_age or prompt=login while the browser is signed in to another account: the sign-up starts the authorization again as the new account, on to consent', async () => {
    for (const fresh of [{ max_age: '300' }, { prompt: 'login' }] as Record<string, string>[]) {
      // An earlier user of this browser, signed in an hour ago, who authorized the app then (so the authorization
      // server's own session holds that account).
      const earlier = await env.createUser();
      await env.db
        .updateTable('sessions')
        .set({ created_at: Date.now() - 3600_000 })
        .where('user_id', '=', earlier.userId)
        .execute();
      const app = await openidApp(Object.keys(fresh)[0]!);
      const page = await newPage();
      await addSessionCookie(page.context(), env.baseUrl, earlier);
      const first = await startSignIn(env, app, ['openid', 'read']);
      await page.goto(first.url.href);
      await page.getByText(`Signed in as ${earlier.email}`).waitFor();
      await allowAndFinish(page, first);

      // The app now wants a fresh sign-in (max_age: younger than 5 minutes, which the earlier one is not).
      const signIn = await startSignIn(env, app, ['openid', 'read'], fresh);
      await page.goto(signIn.url.href);
      await page.getByRole('link', { name: 'Create an account' }).click();
      const newcomer = account();
      await signUp(page, newcomer);
      await page.getByText(`Signed in as ${newcomer.email}`).waitFor();
      // With max_age, openid-client checks the ID token's auth_time against it: the restart kept it.
      const maxAge = 'max_age' in fresh ? 300 : undefined;
      const { claims, email } = await allowAndFinish(page, signIn, maxAge);
      assert.equal(email, newcomer.email, JSON.stringify(fresh));
      if (maxAge) assert.ok(claims.auth_time! > Date.now() / 1000 - maxAge);
      await page.context().close();
    }
  });

  it('prompt=login with a session that existed before the request, even one begun by a sign-up seconds ago, still asks for the password', async () => {
    const app = await openidApp('existing');
    const page = await newPage();
    // Signed up on the dashboard's own sign-up page, just now.
    const person = account();
    await page.goto(`${env.baseUrl}/signup`);
    await signUp(page, person);
    await page.getByRole('heading', { name: 'Wallet' }).waitFor();

    const signIn = await startSignIn(env, app, ['openid', 'read'], { prompt: 'login' });
    await page.goto(signIn.url.href);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    interactionUid(page);
    assert.equal(await page.getByText('Signed in as').count(), 0, 'not on to consent');
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(person.password);
    const passwordAt = Math.floor(Date.now() / 1000);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText(`Signed in as ${person.email}`).waitFor();
    // Consent, a while later, answers the app without asking again; auth_time stays when the password was given.
    await page.waitForTimeout(2500);
    const { claims, email } = await allowAndFinish(page, signIn);
    assert.equal(email, person.email);
    assert.ok(claims.auth_time! - passwordAt <= 1, `auth_time ${claims.auth_time}, password at ${passwordAt}`);
    await page.context().close();
  });

  it('prompt=login: a sign-up made from another authorization’s sign-in page (another tab) does not answer this one', async () => {
    const app = await openidApp('two-tabs');
    const first = await newPage();
    const firstSignIn = await startSignIn(env, app, ['openid', 'read'], { prompt: 'login' });
    await first.goto(firstSignIn.url.href);
    const firstUid = interactionUid(first);

    const second = await first.context().newPage();
    await second.goto((await startSignIn(env, app, ['openid', 'read'], { prompt: 'login' })).url.href);
    assert.notEqual(interactionUid(second), firstUid);
    await second.getByRole('link', { name: 'Create an account' }).click();
    const newcomer = account();
    await signUp(second, newcomer);
    await second.getByText(`Signed in as ${newcomer.email}`).waitFor();

    // Back in the first tab: its own request still asks for the password.
    await first.reload();
    await first.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(interactionUid(first), firstUid);
    assert.equal(await first.getByText('Signed in as').count(), 0, 'not on to consent');
    await first.getByLabel('Email').fill(newcomer.email);
    await first.getByLabel('Password').fill(newcomer.password);
    await first.getByRole('button', { name: 'Sign in' }).click();
    await first.getByText(`Signed in as ${newcomer.email}`).waitFor();
    assert.equal((await allowAndFinish(first, firstSignIn)).email, newcomer.email);
    await first.context().close();
  });
});
