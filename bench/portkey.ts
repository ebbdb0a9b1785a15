import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { freePort, spawnNode, waitForHttp, type Child } from './processes.ts';
import type { Target } from './load.ts';

/**
 * Portkey's open-source gateway, the baseline: installed from the npm registry into a scratch folder
 * (gitignored `.tmp/`), with `@hono/node-server` pinned to 1.14.1 through `overrides` — later versions break
 * its streaming (a known bug of Portkey's own).
 */
export const PORTKEY_VERSION = '1.15.2';
const FOLDER = resolve('.tmp/portkey');
const SERVER = join(FOLDER, 'node_modules/@portkey-ai/gateway/build/start-server.js');

/** Installs the pinned version unless it is already there. */
export function installPortkey(): void {
  const manifest = {
    name: 'portkey-bench',
    private: true,
    dependencies: { '@portkey-ai/gateway': PORTKEY_VERSION },
    overrides: { '@hono/node-server': '1.14.1' },
  };
  const installed = join(FOLDER, 'node_modules/@portkey-ai/gateway/package.json');
  if (existsSync(installed) && JSON.parse(readFileSync(installed, 'utf8')).version === PORTKEY_VERSION) return;
  mkdirSync(FOLDER, { recursive: true });
  writeFileSync(join(FOLDER, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // npm runs under the pinned Node too: its own folder sits next to the node binary of node_modules.
  const npm = join(dirname(process.execPath), '../lib/node_modules/npm/bin/npm-cli.js');
  const args = ['install', '--no-audit', '--no-fund', '--loglevel=error'];
  if (existsSync(npm)) execFileSync(process.execPath, [npm, ...args], { cwd: FOLDER, stdio: 'inherit' });
  else execFileSync('npm', args, { cwd: FOLDER, stdio: 'inherit' });
}

/** Starts Portkey headless on a free loopback port. */
export async function startPortkey(): Promise<{ child: Child; baseUrl: string }> {
  const port = await freePort();
  const child = spawnNode('portkey', [SERVER, `--port=${port}`, '--headless'], {
    cwd: FOLDER,
    env: { NODE_ENV: 'production' },
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${baseUrl}/`, child, 30_000);
  return { child, baseUrl };
}

/** Portkey's chat target: the OpenAI provider with its host pointed at the mock. */
export function portkeyTarget(baseUrl: string, upstreamUrl: string, body: Record<string, unknown>): Target {
  const headers = {
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${upstreamUrl}/v1`,
    authorization: 'Bearer x',
  };
  return { url: `${baseUrl}/v1/chat/completions`, body, headers: () => headers };
}
