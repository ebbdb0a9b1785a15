import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, startSdkSourcePage } from './browser.ts';

/**
 * A third-party app's page with both dialogs, neither given the app's name (`app-name` is optional); the sign-in
 * dialog has a client (one that goes nowhere), as it must to offer Continue.
 */
const PAGE = `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>app</title>
<tollgate-signin-dialog></tollgate-signin-dialog>
<tollgate-restriction-dialog gateway-url="https://tollgate.example"></tollgate-restriction-dialog>
<script type="module">
import { defineTollgateElements } from '/sdk/index.ts';
defineTollgateElements();
document.querySelector('tollgate-signin-dialog').client = { signIn: async () => {} };
window.ready = true;
</script>`;

/** A page whose developer forgot the sign-in dialog's client and the restriction dialog's gateway-url. */
const MISCONFIGURED = `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>app</title>
<tollgate-signin-dialog app-name="Acme"></tollgate-signin-dialog>
<tollgate-restriction-dialog></tollgate-restriction-dialog>
<script type="module">
import { defineTollgateElements } from '/sdk/index.ts';
defineTollgateElements();
window.ready = true;
</script>`;

const SPENDING_LIMIT = {
  error: {
    code: 'SPENDING_LIMIT_EXCEEDED',
    message: 'Daily spending limit exceeded',
    type: 'spending_limit_error',
    limitType: 'daily',
    limit: 2.5,
    current: 2,
    requested: 1,
    resetsAt: '2030-01-02T00:00:00.000Z',
  },
};

/** Opens one dialog on `page`: the sign-in dialog, or the restriction dialog with a spending limit. */
async function openDialog(page: Page, which: 'signin' | 'restriction'): Promise<void> {
  await page.evaluate(
    ([which, error]) => {
      const element = document.querySelector(`tollgate-${which}-dialog`) as HTMLElement & {
        show(): void;
        error: unknown;
      };
      if (which === 'signin') element.show();
      else element.error = error;
    },
    [which, SPENDING_LIMIT] as const,
  );
  await page.locator(`tollgate-${which}-dialog dialog`).waitFor({ state: 'visible' });
}

describe("the SDK's dialogs on a third-party page, in Chromium", () => {
  let server: Awaited<ReturnType<typeof startSdkSourcePage>>;
  let browser: Browser;
  before(async () => {
    server = await startSdkSourcePage(PAGE);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  async function newPage(width: number): Promise<Page> {
    const page = await browser.newPage({ viewport: { width, height: 844 } });
    await page.goto(`${server.origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    return page;
  }

  it('the sign-in dialog without an app-name says "this app" in mid-sentence, not "This app"', async () => {
    const page = await newPage(1280);
    await openDialog(page, 'signin');
    const text = (await page.locator('tollgate-signin-dialog #description').textContent())!;
    assert.equal(
      text,
      'This app uses your Tollgate account for AI. You will go to Tollgate to sign in, choose what this app may do ' +
        'and set a daily spending limit for it. You can change that limit or revoke this app at any time.',
    );
    await page.close();
  });

  it('a request bigger than the whole limit is not called "limit reached": the dialog says the limit must be raised', async () => {
    const page = await newPage(390);
    // Nothing used yet, and a request (its worst case) of 4 credits against a daily limit of 2.5: waiting for the
    // reset and retrying, all "limit reached" suggested, refuses it again.
    const tooBig = { error: { ...SPENDING_LIMIT.error, current: 0, requested: 4 } };
    await page.evaluate((error) => {
      (document.querySelector('tollgate-restriction-dialog') as HTMLElement & { error: unknown }).error = error;
    }, tooBig);
    const dialog = page.getByRole('dialog', { name: 'Daily spending limit too low for this request' });
    await dialog.waitFor();
    assert.equal(
      await dialog.locator('#description').textContent(),
      'This request needs up to 4.00 credits, more than the whole daily limit of 2.50 credits you set for this app: ' +
        'it is refused after the reset too. Raise the limit to send it.',
    );
    await page.close();
  });

  it('a request that would go over a limit not yet reached says so, not that the limit is reached', async () => {
    const page = await newPage(1280);
    await openDialog(page, 'restriction');
    // 2 of 2.5 used and 1 more requested: the limit is not reached, this request would pass it.
    assert.equal(
      await page.locator('tollgate-restriction-dialog #description').textContent(),
      'This request would take this app over the daily spending limit you set for it.',
    );
    await page.close();
  });

  it('when the sign-in cannot start (a plain-http page has no Web Crypto), the dialog says why and Continue works again', async (t) => {
    // A third-party page with the SDK's own client, as an app wires it.
    const app = await startSdkSourcePage(`<!doctype html><meta charset="utf-8"><title>app</title>
<tollgate-signin-dialog app-name="Acme"></tollgate-signin-dialog>
<script type="module">
import { createTollgateClient, defineTollgateElements } from '/sdk/index.ts';
defineTollgateElements();
const dialog = document.querySelector('tollgate-signin-dialog');
dialog.client = createTollgateClient({ baseUrl: 'https://tollgate.example', clientId: 'app_x', redirectUri: location.href, scopes: ['read'] });
window.ready = true;
</script>`);
    t.after(() => app.close());
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(error.message));
    // What a page served over plain http from a host other than localhost gets: no crypto.subtle (PKCE's SHA-256).
    await page.addInitScript(() => Object.defineProperty(Crypto.prototype, 'subtle', { get: () => undefined }));
    await page.goto(`${app.origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    await page.evaluate(() =>
      (document.querySelector('tollgate-signin-dialog') as HTMLElement & { show(): void }).show(),
    );
    const dialog = page.getByRole('dialog', { name: 'Sign in with Tollgate' });
    await dialog.getByRole('button', { name: 'Continue with Tollgate' }).click();
    // Before: the button stayed disabled, nothing was said, and the rejection went to the console.
    await dialog.getByRole('alert').waitFor();
    assert.equal(
      await dialog.getByRole('alert').textContent(),
      'Sign-in needs a secure page (https, or localhost while developing).',
    );
    assert.equal(await dialog.getByRole('button', { name: 'Continue with Tollgate' }).isEnabled(), true);
    assert.deepEqual(failures, []);
    await page.close();
  });

  for (const width of [390, 1280]) {
    it(`at ${width} px, a dialog missing its client or gateway-url says so in the console and shows no dead button or wrong link`, async (t) => {
      const app = await startSdkSourcePage(MISCONFIGURED);
      t.after(() => app.close());
      const page = await browser.newPage({ viewport: { width, height: 844 } });
      const errors: string[] = [];
      page.on('console', (message) => void (message.type() === 'error' && errors.push(message.text())));
      await page.goto(`${app.origin}/`);
      await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);

      await openDialog(page, 'signin');
      const signIn = page.getByRole('dialog', { name: 'Sign in with Tollgate' });
      // Before: Continue was there, and stayed disabled once pressed, with nothing said anywhere.
      assert.equal(await signIn.getByRole('button', { name: 'Continue with Tollgate' }).count(), 0);
      assert.equal(await signIn.getByRole('alert').textContent(), 'Sign-in is not set up on this page yet.');
      assert.ok(
        errors.some((text) => text.includes('<tollgate-signin-dialog>') && text.includes('client')),
        JSON.stringify(errors),
      );
      await page.evaluate(() =>
        (document.querySelector('tollgate-signin-dialog') as HTMLElement & { close(): void }).close(),
      );

      for (const [error, name] of [
        [SPENDING_LIMIT, 'Change this limit'],
        [
          {
            error: {
              code: 'INSUFFICIENT_CREDITS',
              message: 'Insufficient credits',
              type: 'insufficient_credits_error',
              available: 0.5,
              required: 1,
            },
          },
          'Add credits',
        ],
      ] as const) {
        errors.length = 0;
        await page.evaluate((error) => {
          (document.querySelector('tollgate-restriction-dialog') as HTMLElement & { error: unknown }).error = error;
        }, error);
        const dialog = page.locator('tollgate-restriction-dialog dialog');
        await dialog.waitFor({ state: 'visible' });
        // Before: a link to /#/apps or /#/wallet on the app's own origin, a 404 there.
        assert.equal(await dialog.getByRole('link').count(), 0, `no ${name} link`);
        assert.match((await dialog.locator('[part=setup-error]').textContent()) ?? '', /not set the Tollgate address/);
        assert.ok(
          errors.some((text) => text.includes('<tollgate-restriction-dialog>') && text.includes('gateway-url')),
          JSON.stringify(errors),
        );
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
        assert.equal(overflow, false, 'no sideways scroll');
      }
      await page.close();
    });
  }

  for (const which of ['signin', 'restriction'] as const) {
    it(`at 390 px the ${which} dialog stacks its actions, each as wide as the dialog's and easy to tap`, async () => {
      const page = await newPage(390);
      await openDialog(page, which);
      const boxes = await page
        .locator(`tollgate-${which}-dialog .actions > *`)
        .evaluateAll((items) => items.map((item) => item.getBoundingClientRect().toJSON() as DOMRect));
      assert.ok(boxes.length >= 2);
      for (const box of boxes) {
        // One column: the buttons were split over two rows (one left beside the link, one alone below).
        assert.equal(Math.round(box.left), Math.round(boxes[0].left), JSON.stringify(boxes));
        assert.equal(Math.round(box.width), Math.round(boxes[0].width), JSON.stringify(boxes));
        assert.ok(box.height >= 40, `an action ${box.height} px tall`);
        assert.ok(box.right <= 390 - 16, 'inside the screen');
      }
      for (let i = 1; i < boxes.length; i++) assert.ok(boxes[i].top >= boxes[i - 1].bottom, 'no overlap');
      await page.close();
    });
  }
});
