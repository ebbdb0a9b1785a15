import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page, Route } from 'playwright-core';
import { launchChromium, startSdkSourcePage } from './browser.ts';

/**
 * A third-party app's page, as an app writes it: its Send button is disabled while a message is on its way,
 * and a refusal opens the restriction dialog (the SDK's sources, see {@link startSdkSourcePage}).
 */
const PAGE = `<!doctype html><meta charset="utf-8"><title>app</title>
<button id="send">Send</button> <button id="other">Other</button>
<tollgate-restriction-dialog></tollgate-restriction-dialog>
<script type="module">
import { defineTollgateElements } from '/sdk/index.ts';
defineTollgateElements();
const dialog = document.querySelector('tollgate-restriction-dialog');
const send = document.getElementById('send');
send.addEventListener('click', async () => {
  send.disabled = true;
  await new Promise((resolve) => setTimeout(resolve, 20));
  dialog.error = { error: { code: 'SPENDING_LIMIT_EXCEEDED', message: 'Daily spending limit exceeded', type: 'spending_limit_error',
    limitType: 'daily', limit: 2.5, current: 2, requested: 1, resetsAt: new Date(Date.now() + 3600e3).toISOString() } };
  send.disabled = false;
});
window.ready = true;
</script>`;

/** Where the keyboard focus is, through shadow roots: `send`, or `tollgate-restriction-dialog>retry`. */
function focusPath(page: Page): Promise<string> {
  return page.evaluate(() => {
    const path: string[] = [];
    let element = document.activeElement as HTMLElement | null;
    while (element) {
      path.push(element.id || element.dataset.action || element.tagName.toLowerCase());
      element = element.shadowRoot?.activeElement as HTMLElement | null;
    }
    return path.join('>');
  });
}

describe('the restriction dialog in Chromium', () => {
  let server: Awaited<ReturnType<typeof startSdkSourcePage>>;
  let origin = '';
  let browser: Browser;
  before(async () => {
    server = await startSdkSourcePage(PAGE);
    origin = server.origin;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('closed with Escape, it gives the focus back to the control that opened it, even one disabled while the request ran', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    await page.focus('#send');
    await page.keyboard.press('Enter');
    await page.locator('tollgate-restriction-dialog dialog').waitFor({ state: 'visible' });
    assert.equal(await focusPath(page), 'tollgate-restriction-dialog>retry', 'the dialog takes the focus');

    await page.keyboard.press('Escape');
    assert.equal(await page.locator('tollgate-restriction-dialog dialog').isVisible(), false, 'Escape closed it');
    assert.equal(await focusPath(page), 'send', 'the focus is back on the control that opened the dialog');
    // The keyboard user goes on from there, not from a button no one can see.
    await page.keyboard.press('Tab');
    assert.equal(await focusPath(page), 'other');
    await page.close();
  });

  it('dialogs mounted again and again add one focus listener to the page, not one each', async () => {
    const page = await browser.newPage();
    // Counts the page's document-level focusin listeners from before the SDK loads.
    await page.addInitScript(() => {
      const counted = { focusin: 0 };
      (window as unknown as { counted: typeof counted }).counted = counted;
      const add = Document.prototype.addEventListener;
      Document.prototype.addEventListener = function (this: Document, type: string, ...rest: any[]) {
        if (type === 'focusin') counted.focusin++;
        return (add as any).call(this, type, ...rest);
      } as typeof add;
    });
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const listeners = await page.evaluate(() => {
      // An app's component re-rendered 50 times, each time with a dialog of its own.
      for (let i = 0; i < 50; i++) {
        for (const name of ['tollgate-restriction-dialog', 'tollgate-signin-dialog']) {
          const element = document.createElement(name);
          document.body.append(element);
          element.remove();
        }
      }
      return (window as unknown as { counted: { focusin: number } }).counted.focusin;
    });
    assert.equal(listeners, 1);
    await page.close();
  });

  it('a token that cannot be had (a refresh failing offline) leaves the reads out, without an uncaught error', async () => {
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(error.message));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    await page.evaluate(() => {
      const dialog = document.querySelector('tollgate-restriction-dialog') as HTMLElement & {
        error: unknown;
        getToken: () => Promise<string | null>;
      };
      // What client.getAccessToken() does when its refresh cannot reach the gateway.
      dialog.getToken = () => Promise.reject(new TypeError('Failed to fetch'));
      dialog.error = {
        error: { code: 'INSUFFICIENT_CREDITS', message: 'Insufficient credits', available: 0.5, required: 1 },
      };
    });
    await page.getByRole('dialog', { name: 'Not enough credits' }).waitFor();
    await page.waitForTimeout(200);
    // Before, the rejection escaped the dialog's reads: "Uncaught (in promise) TypeError: Failed to fetch".
    assert.deepEqual(failures, []);
    await page.close();
  });

  it('the Add credits link asks for exactly the credits missing, with no floating-point tail', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    const href = await page.evaluate(() => {
      const dialog = document.querySelector('tollgate-restriction-dialog') as HTMLElement & { error: unknown };
      dialog.setAttribute('gateway-url', 'https://tollgate.example');
      // 1 - 0.7 is 0.30000000000000004 in floating point; the wallet holds micro-credits, 0.3 is missing.
      dialog.error = {
        error: {
          code: 'INSUFFICIENT_CREDITS',
          message: 'Insufficient credits',
          type: 'insufficient_credits_error',
          available: 0.7,
          required: 1,
        },
      };
      return dialog.shadowRoot!.querySelector('[part=add-credits]')!.getAttribute('href');
    });
    assert.equal(href, 'https://tollgate.example/#/wallet?need=0.3');
    await page.close();
  });

  for (const { kind, error, link } of [
    {
      kind: 'a 402',
      error: { code: 'INSUFFICIENT_CREDITS', message: 'Insufficient credits', available: 0.5, required: 1 },
      link: 'Add credits',
    },
    {
      kind: 'a 429',
      error: {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message: 'Daily spending limit exceeded',
        limitType: 'daily',
        limit: 2.5,
        current: 2,
        requested: 1,
        resetsAt: null,
      },
      link: 'Change this limit',
    },
  ])
    it(`on ${kind}, its link keeps the keyboard focus when the dialog's reads arrive and it re-renders`, async () => {
      const page = await browser.newPage();
      let reads = 0;
      // The dialog's reads are slow: the keyboard user has moved to the link before they arrive.
      const answer = (body: unknown) => (route: Route) => {
        setTimeout(() => {
          reads++;
          void route.fulfill({ json: body });
        }, 800);
      };
      await page.route('**/api/user/me', answer({ id: 'usr_1', email: 'ada@example.com', name: 'Ada' }));
      await page.route('**/api/wallet/balance', answer({ balance: 0.5, reserved: 0, available: 0.5 }));
      await page.route('**/api/user/authorized-apps', answer({ apps: [] }));
      await page.goto(`${origin}/`);
      await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
      await page.evaluate((error) => {
        const dialog = document.querySelector('tollgate-restriction-dialog') as HTMLElement & {
          error: unknown;
          getToken: () => Promise<string | null>;
        };
        dialog.setAttribute('gateway-url', location.origin);
        dialog.getToken = async () => 'tok_app';
        dialog.error = { error };
      }, error);
      await page.locator('tollgate-restriction-dialog dialog').waitFor({ state: 'visible' });
      assert.equal(await focusPath(page), 'tollgate-restriction-dialog>retry');
      // From Retry, the last control, Tab cycles to the first: the link.
      await page.keyboard.press('Tab');
      const onLink = () =>
        page.evaluate(
          () =>
            document.querySelector('tollgate-restriction-dialog')!.shadowRoot!.activeElement?.textContent ?? 'nothing',
        );
      assert.equal(await onLink(), link);
      await page.waitForFunction(() =>
        document.querySelector('tollgate-restriction-dialog')!.shadowRoot!.innerHTML.includes('ada@example.com'),
      );
      assert.equal(reads, 3, 'the dialog re-rendered with its reads');
      // Before, the focus fell to the page's <body>: only elements with a data-action got it back.
      assert.equal(await onLink(), link);
      assert.equal(await focusPath(page), 'tollgate-restriction-dialog>a');
      await page.close();
    });
});
