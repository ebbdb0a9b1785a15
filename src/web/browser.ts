import { existsSync, mkdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { BUILT, REPO_ROOT } from './static.ts';

/** Debian's Chromium (installed by `.ci/run`); `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Builds the dashboard, the demo and the SDK bundle when a folder is missing (a run of `node scripts/test.ts`
 * without `npm test`'s pretest build).
 */
export function ensureWebBuilt(): void {
  if (
    [BUILT.dashboard, BUILT.demo, BUILT.sdk].every((folder) =>
      existsSync(join(folder, folder === BUILT.sdk ? 'tollgate-sdk.js' : 'index.html')),
    )
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

/** With `TOLLGATE_SCREENSHOTS=1`, saves `docs/<name>.png` (how the README's pictures are made). */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.TOLLGATE_SCREENSHOTS !== '1') return;
  const folder = join(REPO_ROOT, 'docs');
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: join(folder, `${name}.png`), fullPage: options.fullPage });
}
