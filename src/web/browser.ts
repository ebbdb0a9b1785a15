import { existsSync, mkdirSync } from 'node:fs';
import { after, before } from 'node:test';
import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { stripTypeScriptTypes } from 'node:module';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { DashboardSession } from '../testing/harness.ts';
import { BUILT, REPO_ROOT } from './static.ts';

/**
 * An HTTP server answering every path with an empty page titled `title`: a third-party app's page, on another
 * origin than Tollgate's, for what a browser allows across origins.
 */
export async function startOtherOriginPage(title: string): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((_, response) =>
    response.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>${title}</title>`),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A page on another origin ({@link startOtherOriginPage}) for the tests of the suite this is called in: started in
 * the suite's `before`, closed in its `after` (an app's site, where its redirect URIs land).
 */
export function otherOriginPageForSuite(title: string): { readonly origin: string } {
  let site: { origin: string; close(): Promise<void> } | undefined;
  before(async () => {
    site = await startOtherOriginPage(title);
  });
  after(() => site?.close());
  return {
    get origin() {
      if (!site) throw new Error('The page is started in the suite’s before hook: read its origin in a test.');
      return site.origin;
    },
  };
}

/**
 * An HTTP server answering `/` with `html` (a third-party app's page) and `/sdk/<file>.ts` with the SDK's own
 * source, its types stripped: a test of the SDK's elements runs the code as it is now, not a bundle built earlier.
 */
export async function startSdkSourcePage(html: string): Promise<{ origin: string; close(): Promise<void> }> {
  const source = new URL('../../packages/sdk/src/', import.meta.url);
  const server = createServer(async (request, response) => {
    const path = new URL(request.url!, 'http://x').pathname;
    if (path === '/') return response.writeHead(200, { 'content-type': 'text/html' }).end(html);
    const name = /^\/sdk\/([a-z-]+\.ts)$/.exec(path)?.[1];
    if (!name) return response.writeHead(404).end();
    const code = stripTypeScriptTypes(await readFile(new URL(name, source), 'utf8'));
    response.writeHead(200, { 'content-type': 'text/javascript' }).end(code);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Debian's Chromium (installed by `.ci/run`); `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Builds the dashboard, the demo, the SDK bundle and the packages' declarations when one is missing (a run of
 * `node scripts/test.ts` without `npm test`'s pretest build).
 */
export function ensureWebBuilt(): void {
  if (
    [BUILT.dashboard, BUILT.demo, BUILT.sdk].every((folder) =>
      existsSync(join(folder, folder === BUILT.sdk ? 'tollgate-sdk.js' : 'index.html')),
    ) &&
    ['packages/sdk/dist/index.d.ts', 'packages/wire/dist/index.js'].every((file) => existsSync(join(REPO_ROOT, file)))
  )
    return;
  const result = spawnSync(process.execPath, ['scripts/build-web.ts'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build failed');
}

/** Headless Chromium with a fresh profile, no network chatter of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * One headless Chromium for the tests of the suite this is called in (inside a `describe`): the web assets built
 * and the browser launched in the suite's `before`, closed in its `after`. What it returns stands for that browser
 * (each property read is forwarded to it), so a suite writes `const browser = chromiumForSuite();` where every
 * browser suite used to repeat the same five lines of set-up.
 */
export function chromiumForSuite(): Browser {
  let launched: Browser | undefined;
  before(async () => {
    ensureWebBuilt();
    launched = await launchChromium();
  });
  after(() => launched?.close());
  return new Proxy({} as Browser, {
    get(_, property) {
      if (!launched) throw new Error('Chromium is launched in the suite’s before hook: use the browser in a test.');
      const value = Reflect.get(launched, property, launched);
      return typeof value === 'function' ? value.bind(launched) : value;
    },
  });
}

/** A page in a fresh context (no cookies) of `browser`, whose waits give up after 15 s rather than Playwright's 30. */
export async function freshPage(browser: Browser): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

/** Signs `context` in to the dashboard at `baseUrl` as `session`: the cookies its sign-in set (`tg_session`). */
export async function addSessionCookie(
  context: BrowserContext,
  baseUrl: string,
  session: Pick<DashboardSession, 'cookie'>,
): Promise<void> {
  await context.addCookies(
    session.cookie.split('; ').map((pair) => ({
      name: pair.slice(0, pair.indexOf('=')),
      value: pair.slice(pair.indexOf('=') + 1),
      url: baseUrl,
    })),
  );
}

/** With `TOLLGATE_SCREENSHOTS=1`, saves `docs/<name>.png` (how the README's pictures are made). */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.TOLLGATE_SCREENSHOTS !== '1') return;
  const folder = join(REPO_ROOT, 'docs');
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: join(folder, `${name}.png`), fullPage: options.fullPage });
}

/**
 * Signs in to the demo app on `page` through the gateway's OAuth pages: the SDK's dialog, the sign-in form when
 * asked (a browser already signed in to the dashboard goes straight to consent), then consent with a daily limit
 * (`''` for none); resolves once the chat shows.
 */
export async function signInToDemo(
  page: Page,
  user: { email: string; password: string },
  dailyLimit: string,
): Promise<void> {
  await page.getByRole('button', { name: 'Sign in with Tollgate' }).click();
  const signInDialog = page.getByRole('dialog', { name: 'Sign in with Tollgate' });
  await signInDialog.waitFor();
  await signInDialog.getByRole('button', { name: 'Continue with Tollgate' }).click();
  const allow = page.getByRole('button', { name: 'Allow' });
  const signIn = page.getByRole('button', { name: 'Sign in' });
  await allow.or(signIn).first().waitFor();
  if (await signIn.isVisible()) {
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await signIn.click();
  }
  await page.getByLabel('Daily spending limit').fill(dailyLimit);
  await allow.click();
  await page.getByRole('region', { name: 'Chat' }).waitFor();
}
