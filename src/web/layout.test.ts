import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';
import { addSessionCookie, ensureWebBuilt, launchChromium, screenshot, signInToDemo } from './browser.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { putModel, settled, usageOf } from '../gateway/testing.ts';

/** An upstream that reports the usage a request dictates: for the usage page, a prompt mostly read from cache. */
const mock = await startMockUpstream();
after(() => mock.close());

/** The two widths every page is checked at: a laptop and a phone (iPhone 12–15). */
const WIDTHS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;
type Width = keyof typeof WIDTHS;

const PAGES = [
  { route: 'wallet', heading: 'Wallet', shot: 'wallet' },
  { route: 'usage', heading: 'Usage', shot: 'usage' },
  { route: 'keys', heading: 'API keys', shot: 'api-keys' },
  { route: 'apps', heading: 'Authorized apps', shot: 'authorized-apps' },
  { route: 'developer', heading: 'Developer apps', shot: 'developer-apps' },
  { route: 'webhooks', heading: 'Webhooks', shot: 'webhooks' },
] as const;

/** Screenshots this suite owns (`TOLLGATE_SCREENSHOTS=1`): every page at phone width, and the desktop pages it changed. */
const DESKTOP_SHOTS = new Set(['api-keys', 'authorized-apps', 'demo-signed-out']);
async function shoot(page: Page, name: string, width: Width): Promise<void> {
  // A phone page is long: the whole of it, the tables below the fold included.
  if (width === 'phone') await screenshot(page, `${name}-phone`, { fullPage: true });
  else if (DESKTOP_SHOTS.has(name)) await screenshot(page, name);
}

/** A new browser context signed in to the dashboard as `session` (its cookie), at `width`. */
async function signedIn(
  browser: Browser,
  baseUrl: string,
  session: DashboardSession | null,
  width: Width,
  colorScheme: 'light' | 'dark' = 'light',
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: WIDTHS[width], colorScheme });
  if (session) {
    await addSessionCookie(context, baseUrl, session);
  }
  return context;
}

async function open(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(url);
  return page;
}

/** What sticks out sideways: the page itself, and any table wider than the box it scrolls in. */
function overflow(page: Page) {
  return page.evaluate(() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    tables: [...document.querySelectorAll('.table-wrap')]
      .map((wrap) => wrap.scrollWidth - wrap.clientWidth)
      .filter((extra) => extra > 1),
  }));
}

/** How many lines a button's or an element's text takes. */
function linesOf(page: Page, selector: string) {
  return page
    .locator(selector)
    .first()
    .evaluate((element) => {
      const range = document.createRange();
      range.selectNodeContents(element);
      return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
    });
}

/** Axis labels of the spend charts that do not lie wholly inside their SVG (cut off). */
function cutAxisLabels(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('figure.chart svg')].flatMap((svg) => {
      const [, , width, height] = (svg.getAttribute('viewBox') ?? '').split(' ').map(Number);
      return [...svg.querySelectorAll('text.axis')]
        .map((text) => ({ label: text.textContent, box: (text as SVGTextElement).getBBox() }))
        .filter(({ box }) => box.x < 0 || box.y < 0 || box.x + box.width > width! || box.y + box.height > height!)
        .map(({ label }) => label);
    }),
  );
}

/** Chart labels drawn smaller than 9 px on screen (an SVG scaled down to a phone shrinks its text with it). */
function tinyAxisLabels(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('figure.chart text.axis')]
      .filter((text) => text.getBoundingClientRect().height < 9)
      .map((text) => text.textContent),
  );
}

describeEachDatabase(
  'dashboard and demo layout at desktop and phone widths',
  (env) => {
    let browser: Browser;
    let session: DashboardSession;
    let keyId: string;
    before(async () => {
      ensureWebBuilt();
      browser = await launchChromium();
      session = await env.createUser({ name: 'Layout Tester' });
      // 9.999956: a balance the old display rounded up to 10.00.
      assert.equal(
        (
          await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
            amount: 9.999956,
            reason: 'layout test',
          })
        ).status,
        200,
      );
      // An app of the user's own, with a long redirect URI: the developer page's table must fit a phone too.
      const owned = {
        name: 'Layout Developer App',
        redirectUris: ['https://layout-app.example.com/oauth/callback/with/a/long/path'],
        scopes: ['read', 'ai:chat'],
        type: 'public',
      };
      assert.equal((await env.dashboard(session, 'POST', '/api/user/apps', owned)).status, 201);
    });
    after(() => browser?.close());

    test('the wallet shows a balance of 9.999956 as it is, never rounded up to 10.00', async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await open(context, `${env.baseUrl}/#/wallet`);
      await assert.doesNotReject(page.getByTestId('wallet-balance').filter({ hasText: '9.999956' }).waitFor());
      assert.equal(await page.getByTestId('wallet-available').textContent(), '9.999956');
      await context.close();
    });

    test('after calls with a key and with an app, the keys and authorized-apps pages show what each spent', async () => {
      const key = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'phone key',
        permissions: ['ai:chat'],
      });
      keyId = key.body.apiKey.id;
      const chat = {
        model: 'tollgate/echo',
        messages: [{ role: 'user', content: 'what did this key spend on this long message' }],
      };
      assert.equal(
        (await env.request('POST', '/api/v1/chat/completions', { token: key.body.apiKey.key, body: chat })).status,
        200,
      );
      const registered = await registerTestApp(env, { name: 'Layout App', scopes: ['read', 'ai:chat'] });
      const app = await authorizeForTest(env, { user: session, app: registered, scopes: ['read', 'ai:chat'] });
      assert.equal(
        (await env.request('POST', '/api/v1/chat/completions', { token: app.accessToken, body: chat })).status,
        200,
      );
      const usage = async () => (await env.dashboard(session, 'GET', '/api/usage')).body;
      for (let i = 0; i < 100 && (await usage()).totals.requests < 2; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const report = await usage();
      const keySpent = report.byKey.find((row: any) => row.keyId === keyId).cost;
      const appSpent = report.byApp.find((row: any) => row.appId === app.clientId).cost;
      assert.ok(keySpent > 0 && appSpent > 0);

      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await open(context, `${env.baseUrl}/#/keys`);
      const row = page.locator(`tr[data-key-id="${keyId}"]`);
      await row
        .getByTestId('key-spent')
        .filter({ hasText: /^\s*0\.0/ })
        .waitFor();
      // One call: its count reads "1 request", on the key's hover title and on the app's card.
      assert.equal(await row.getByTestId('key-spent').getAttribute('title'), '1 request');
      assert.equal(
        (await row.getByTestId('key-spent').textContent())!.trim(),
        keySpent
          .toFixed(6)
          .replace(/0+$/, '')
          .replace(/\.(\d)$/, '.$10'),
      );
      await page.goto(`${env.baseUrl}/#/apps`);
      const spent = page.getByRole('region', { name: 'Layout App' }).getByTestId('app-spent');
      await spent.filter({ hasText: 'request' }).waitFor();
      assert.match(
        (await spent.textContent())!,
        new RegExp(`${String(appSpent).replace('.', '\\.')}\\d* credits · 1 request · usage by model`),
      );
      await context.close();
    });

    test('at phone width the usage page shows, beside the prompt tokens, how many were cache reads and cache writes', async () => {
      // Priced low so that the test user's ten credits cover it; reads at a tenth of the prompt price.
      await putModel(env, 'acme/cached', {
        provider: 'openai',
        upstreamModel: 'gpt-x',
        pricing: { prompt: 3, cacheRead: 0.3, cacheWrite: 3.75, completion: 15 },
      });
      const key = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'cache key',
        permissions: ['ai:chat'],
      });
      const user = { session, key: key.body.apiKey.key as string };
      // What the upstream reports: 100,000 prompt tokens, 95,000 of them read from its cache and 2,000 written to it.
      const mockUsage = {
        prompt_tokens: 100_000,
        completion_tokens: 1_000,
        total_tokens: 101_000,
        prompt_tokens_details: { cached_tokens: 95_000, cache_write_tokens: 2_000 },
      };
      const call = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: {
          model: 'acme/cached',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 1_000,
          metadata: { mock_usage: mockUsage },
        },
      });
      assert.equal(call.status, 200, call.text);
      await settled(env, user);
      await usageOf(env, user, 3);

      const context = await signedIn(browser, env.baseUrl, session, 'phone');
      const page = await open(context, `${env.baseUrl}/#/usage`);
      /** The cells of the row named `name` in the table labelled `table`, by their (phone-visible) labels. */
      const cells = async (table: string, name: string): Promise<Record<string, string>> => {
        const row = page
          .getByRole('table', { name: table })
          .locator('tbody tr', { has: page.locator('td:first-child', { hasText: name }) });
        await row.waitFor();
        return Object.fromEntries(
          await row.locator('td').evaluateAll((tds) => tds.map((td) => [td.dataset.label, td.textContent!.trim()])),
        );
      };
      const model = await cells('Model', 'acme/cached');
      assert.equal(model['Prompt tokens'], '100,000');
      assert.equal(model['Cache-read tokens'], '95,000');
      assert.equal(model['Cache-write tokens'], '2,000');
      assert.equal(model['Completion tokens'], '1,000');
      const byKey = await cells('API key', 'cache key');
      assert.equal(byKey['Cache-read tokens'], '95,000');
      assert.equal(byKey['Cache-write tokens'], '2,000');
      // The echo model's calls (the earlier test) read nothing from a cache.
      assert.equal((await cells('Model', 'tollgate/echo'))['Cache-read tokens'], '0');
      // A phone stacks each row into labelled lines: the new ones show, inside the screen, and nothing sticks out.
      for (const label of ['Cache-read tokens', 'Cache-write tokens']) {
        const cell = page.getByRole('table', { name: 'Model' }).locator(`td[data-label="${label}"]`).first();
        const box = (await cell.boundingBox())!;
        assert.ok(box && box.x >= 0 && box.x + box.width <= WIDTHS.phone.width, `${label} is off the phone's screen`);
      }
      assert.deepEqual(await overflow(page), { page: 0, tables: [] });
      await context.close();
    });

    for (const width of Object.keys(WIDTHS) as Width[]) {
      test(`signed in at ${width} width, no page sticks out sideways, tables fit, "Sign out" stays on one line`, async () => {
        const context = await signedIn(browser, env.baseUrl, session, width);
        const page = await open(context, `${env.baseUrl}/#/wallet`);
        for (const { route, heading, shot } of PAGES) {
          await page.goto(`${env.baseUrl}/#/${route}`);
          await page.getByRole('heading', { level: 1, name: heading }).waitFor();
          await page.waitForLoadState('networkidle');
          assert.deepEqual(await overflow(page), { page: 0, tables: [] }, `${route} at ${width}`);
          assert.equal(
            await linesOf(page, '.topbar button:has-text("Sign out")'),
            1,
            `Sign out wraps on ${route} at ${width}`,
          );
          assert.deepEqual(await cutAxisLabels(page), [], `${route} at ${width}: chart labels cut off`);
          assert.deepEqual(await tinyAxisLabels(page), [], `${route} at ${width}: chart labels too small to read`);
          await shoot(page, shot, width);
        }
        await context.close();
      });

      test(`signed out at ${width} width, the sign-in page and the demo fit, and the demo shows no account, badge or message box`, async () => {
        const context = await signedIn(browser, env.baseUrl, null, width);
        const dashboard = await open(context, `${env.baseUrl}/`);
        await dashboard.getByRole('button', { name: 'Sign in' }).first().waitFor();
        assert.equal((await overflow(dashboard)).page, 0);
        await shoot(dashboard, 'sign-in', width);

        const demo = await open(context, `${env.baseUrl}/demo/`);
        await demo.getByRole('button', { name: 'Sign in with Tollgate' }).waitFor();
        assert.equal(
          await demo.getByRole('button', { name: 'Sign out' }).isVisible(),
          false,
          'Sign out is shown signed out',
        );
        assert.equal(await demo.locator('#balance').isVisible(), false, 'an empty balance badge is shown');
        assert.equal(await demo.getByLabel('Message').isVisible(), false, 'the message box is shown signed out');
        assert.equal(await demo.locator('#composer').isVisible(), false);
        assert.equal((await overflow(demo)).page, 0);
        // Sending, even by a script or before main.ts ran, never navigates (it put the message into the URL).
        await demo.evaluate(() => {
          (document.getElementById('message') as HTMLInputElement).value = 'hello';
          (document.getElementById('composer') as HTMLFormElement).requestSubmit();
        });
        await demo.waitForTimeout(200);
        assert.equal(new URL(demo.url()).search, '');
        assert.equal(await demo.getByRole('button', { name: 'Sign in with Tollgate' }).isVisible(), true);
        await shoot(demo, 'demo-signed-out', width);
        await context.close();
      });

      test(`signed in to the demo at ${width} width, it fits: the message box keeps a usable width, the balance and "Sign out" stay on one line`, async () => {
        // Signed in to the dashboard, the demo's "Sign in with Tollgate" goes straight to the consent page.
        const context = await signedIn(browser, env.baseUrl, session, width);
        const demo = await open(context, `${env.baseUrl}/demo/`);
        await signInToDemo(demo, session, '');
        await demo.locator('#who', { hasText: session.email }).waitFor();
        await demo.locator('#balance', { hasText: 'credits' }).waitFor();
        assert.equal((await overflow(demo)).page, 0, `the signed-in demo sticks out sideways at ${width}`);
        for (const selector of ['#balance', '#sign-out', '#who'])
          assert.equal(await linesOf(demo, selector), 1, `${selector} wraps at ${width}`);
        const { viewport, composer, message } = await demo.evaluate(() => ({
          viewport: window.innerWidth,
          composer: document.getElementById('composer')!.getBoundingClientRect().width,
          message: document.getElementById('message')!.getBoundingClientRect().width,
        }));
        // The input, not the model, Stream and Send, takes the room ("Say something…" was cut to "Say" on a phone).
        assert.ok(
          message >= composer / 2,
          `the message box is ${message} px of the composer's ${composer} at ${width}`,
        );
        if (width === 'phone')
          assert.ok(message >= viewport * 0.6, `the message box is ${message} px of a ${viewport} px phone`);
        await shoot(demo, 'demo-chat', width);
        await context.close();
      });
    }

    test('the operator command on the wallet never breaks inside a word or a number, at phone width', async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'phone');
      const page = await open(context, `${env.baseUrl}/#/wallet`);
      const command = page.locator('code.command');
      await command.waitFor();
      const split = await command.evaluate((code) =>
        [...code.querySelectorAll('.word')]
          .filter((word) => {
            const range = document.createRange();
            range.selectNodeContents(word);
            return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size > 1;
          })
          .map((word) => word.textContent),
      );
      assert.equal(await command.textContent(), 'tollgate grant-credits --email you@example.com --amount 10');
      assert.equal(await command.locator('.word').count(), 6);
      assert.deepEqual(split, []);
      await context.close();
    });

    test('hold rows in the transactions are not shown as a green gain', async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await open(context, `${env.baseUrl}/#/wallet`);
      const holds = page.locator('tr', { has: page.locator('.chip', { hasText: /^hold$/ }) });
      await holds.first().waitFor();
      for (const cell of await holds.locator('td.num').all()) {
        assert.doesNotMatch((await cell.getAttribute('class'))!, /positive/);
        assert.doesNotMatch((await cell.textContent())!, /^\+/);
      }
      await context.close();
    });

    test("the key form's Period defaults to total, as the API does", async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await open(context, `${env.baseUrl}/#/keys`);
      assert.equal(await page.getByLabel('Period').inputValue(), 'total');
      await context.close();
    });

    test("after a key is created, the key form's Period is back to total, not daily", async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await open(context, `${env.baseUrl}/#/keys`);
      await page.getByLabel('Name').fill('period reset key');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByTestId('new-key').waitFor();
      // A limit typed for the next key must not become a daily one unasked: the form showed Daily here.
      assert.equal(await page.getByLabel('Period').inputValue(), 'total');
      await context.close();
    });

    test('the theme follows the system, also after a visit, until the user picks one; picking the system’s own follows it again', async () => {
      const context = await signedIn(browser, env.baseUrl, session, 'desktop', 'dark');
      const page = await open(context, `${env.baseUrl}/#/wallet`);
      const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
      await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
      assert.equal(await theme(), 'dark');
      await page.emulateMedia({ colorScheme: 'light' });
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
      // The user picks light: it stays light whatever the system does, across visits.
      await page.getByRole('button', { name: 'Switch to light mode' }).click();
      // The page applies the theme in an effect after the click's render: wait for it, then assert.
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
      assert.equal(await theme(), 'light');
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
      assert.equal(await theme(), 'light');
      // Picking dark, the system's, stores nothing: the page follows the system again.
      await page.getByRole('button', { name: 'Switch to dark mode' }).click();
      assert.equal(await page.evaluate(() => localStorage.getItem('tollgate:theme')), null);
      await page.emulateMedia({ colorScheme: 'light' });
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'light');
      await context.close();
    });
  },
  { config: { OPENAI_BASE_URL: `${mock.url}/v1`, OPENAI_API_KEY: 'sk-test' } },
);
