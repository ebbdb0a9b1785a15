import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { ensureWebBuilt, launchChromium, startOtherOriginPage } from '../web/browser.ts';
import { storedPayloadId } from './adapter.ts';
import { interactionUid, newEmail, registerTestApp, signUp, startSignIn } from './testing.ts';

describeEachDatabase('creating an account from an app’s sign-in page, in Chromium', (env) => {
  let browser: Browser;
  let appSite: { origin: string; close(): Promise<void> };
  before(async () => {
    ensureWebBuilt();
    browser = await launchChromium();
    appSite = await startOtherOriginPage('Back at the app');
  });
  after(async () => {
    await browser?.close();
    await appSite?.close();
  });

  async function newPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    const page = await (await browser.newContext({ viewport })).newPage();
    page.setDefaultTimeout(15_000);
    return page;
  }

  it('a new user follows "Create an account", signs up, consents, and the app’s code is exchanged for that new user’s tokens', async () => {
    const app = await registerTestApp(env, {
      name: 'Notes App',
      scopes: ['openid', 'email', 'read'],
      redirectUris: [`${appSite.origin}/callback/new-user`],
    });
    const signIn = await startSignIn(env, app, ['openid', 'email', 'read']);
    const page = await newPage();
    await page.goto(signIn.url.href);

    // The sign-in page keeps its labels, and offers a way in to someone without an account.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Email').waitFor();
    await page.getByLabel('Password').waitFor();
    const uid = interactionUid(page);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.waitForURL((url) => url.pathname === '/signup');
    assert.equal(
      await page.locator('input[name="return_to"]').inputValue(),
      `/api/oauth/interaction/${uid}`,
      'the sign-up form returns to this interaction',
    );

    const account = { name: 'Nora New', email: newEmail(), password: 'a long new password' };
    await signUp(page, account);

    // Back in the same authorization (its state comes back to the app below): the sign-in step is done, and
    // consent names the new account.
    await page.getByText(`Signed in as ${account.email}`).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(app.redirectUri));

    // The app finishes the sign-in as openid-client does (state, iss, PKCE, ID token checked).
    const tokens = await client.authorizationCodeGrant(signIn.config, new URL(page.url()), {
      pkceCodeVerifier: signIn.codeVerifier,
      expectedState: signIn.state,
      expectedNonce: signIn.nonce,
      idTokenExpected: true,
    });
    const me = await env.request('GET', '/api/user/me', { token: tokens.access_token });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.email, account.email);
    assert.equal(tokens.claims()?.sub, me.body.id, 'the ID token is the new user’s');
    await page.context().close();
  });

  it('signing up with an email that has an account comes back to the sign-in page, signed in as nobody; the real password then goes on', async () => {
    const owner = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [`${appSite.origin}/callback/taken`] });
    const page = await newPage();
    await page.goto((await startSignIn(env, app, ['read'])).url.href);
    const uid = interactionUid(page);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await signUp(page, { email: owner.email, password: 'not the real password' });

    // Sign-up does not say the email is taken: the same redirect as a new account, but no session.
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal(interactionUid(page), uid);
    const session = await page.context().request.get(`${env.baseUrl}/api/auth/session`);
    assert.notEqual(session.status(), 200, 'nobody is signed in');
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText(`Signed in as ${owner.email}`).waitFor();
    await page.context().close();
  });

  it('signing up after the authorization expired ends on a page saying so, not an error, with the account made', async () => {
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [`${appSite.origin}/callback/late`] });
    const page = await newPage();
    await page.goto((await startSignIn(env, app, ['read'])).url.href);
    const uid = interactionUid(page);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();

    // The interaction runs out while the user types (30 minutes: OAUTH_TTL.Interaction).
    await env.db
      .updateTable('oidc_payloads')
      .set({ expires_at: Date.now() - 1000 })
      .where('model', '=', 'Interaction')
      .where('id', '=', storedPayloadId('Interaction', uid))
      .executeTakeFirstOrThrow();
    const account = { email: newEmail(), password: 'a long new password' };
    const answer = page.waitForResponse((response) => response.url().endsWith(`/api/oauth/interaction/${uid}`));
    await signUp(page, account);
    assert.equal((await answer).status(), 400);
    await page.getByRole('heading', { name: 'Authorization failed' }).waitFor();
    await page.getByText('This authorization request has expired or is not valid.').waitFor();
    await page.getByText('Go back to the app and start again.').waitFor();
    // The account is made and the browser signed in to it: starting again from the app goes straight to consent.
    const session = await page.context().request.get(`${env.baseUrl}/api/auth/session`);
    assert.equal((await session.json()).user.email, account.email);
    await page.context().close();
  });

  it('a foreign or malformed return target on the sign-up form is refused: the browser stays on Tollgate’s own pages', async () => {
    const refused = [
      '//evil.example/x',
      'https://evil.example/',
      '/\\evil.example',
      '/\t/evil.example',
      'javascript:alert(1)',
      `${env.baseUrl}/api/oauth/interaction/abc`,
      '/api/oauth/authorize?client_id=app_x&response_type=code',
      '/api/oauth/interaction/abc/consent',
      '/api/oauth/interaction/abc?next=//evil.example',
      '/api/oauth/interaction/abc#x',
      '/api/oauth/interaction/a.b',
      '/API/oauth/interaction/abc',
      '/%61pi/oauth/interaction/abc',
      '/./api/oauth/interaction/abc',
      '/x/../api/user/me',
      '/api%2Foauth%2Finteraction%2Fabc',
    ];
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const returnTo of refused) {
      const response = await env.request('POST', '/signup', {
        raw: new URLSearchParams({
          email: newEmail(),
          password: 'a long new password',
          return_to: returnTo,
        }).toString(),
        headers: form,
      });
      assert.equal(response.status, 303, returnTo);
      assert.equal(response.headers.get('location'), '/', `${returnTo} is replaced by the dashboard`);
    }
    // Only an interaction's own page, exactly, is kept (and a dashboard path, as before).
    for (const kept of ['/api/oauth/interaction/Ab_9-x', '/#/keys']) {
      const response = await env.request('POST', '/signup', {
        raw: new URLSearchParams({ email: newEmail(), password: 'a long new password', return_to: kept }).toString(),
        headers: form,
      });
      assert.equal(response.headers.get('location'), kept);
    }

    // In Chromium: a crafted link to the sign-up page ends on Tollgate, never on the other site.
    const page = await newPage();
    for (const returnTo of ['//evil.example/x', `${appSite.origin}/stolen`, '/api/oauth/authorize?client_id=x']) {
      await page.goto(`${env.baseUrl}/signup?return_to=${encodeURIComponent(returnTo)}`);
      assert.equal(await page.locator('input[name="return_to"]').inputValue(), '/');
    }
    await page.goto(`${env.baseUrl}/signup?return_to=${encodeURIComponent(`${appSite.origin}/stolen`)}`);
    await signUp(page, { email: newEmail(), password: 'a long new password' });
    await page.getByRole('heading', { name: 'Wallet' }).waitFor();
    assert.equal(new URL(page.url()).origin, new URL(env.baseUrl).origin);
    await page.context().close();
  });

  it('at 390 px the app’s sign-in page and the sign-up page it leads to fit the screen', async () => {
    const app = await registerTestApp(env, {
      name: 'An App With A Rather Long Name For A Small Phone',
      scopes: ['read'],
      redirectUris: [`${appSite.origin}/callback/phone`],
    });
    const page = await newPage({ width: 390, height: 844 });
    await page.goto((await startSignIn(env, app, ['read'])).url.href);
    const fits = () =>
      page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        width: window.innerWidth,
        outside: [...document.querySelectorAll('main *')]
          .filter((element) => element.getBoundingClientRect().right > window.innerWidth)
          .map((element) => element.outerHTML.slice(0, 80)),
      }));
    const link = page.getByRole('link', { name: 'Create an account' });
    await link.waitFor();
    const signInPage = await fits();
    assert.ok(signInPage.scroll <= 390 && signInPage.outside.length === 0, JSON.stringify(signInPage));
    // The link sits below the button, not flush against it.
    const gap = await page.evaluate(() => {
      const button = document.querySelector('button.primary')!.getBoundingClientRect();
      const link = document.querySelector('p.more')!.getBoundingClientRect();
      return link.top - button.bottom;
    });
    assert.ok(gap >= 12, `gap under the button: ${gap}`);
    await link.click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    const signUpPage = await fits();
    assert.ok(signUpPage.scroll <= 390 && signUpPage.outside.length === 0, JSON.stringify(signUpPage));
    await page.context().close();
  });
});
