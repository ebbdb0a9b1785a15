import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveAddress } from '../testing/harness.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The shell blocks of the README's "First steps" and "Quick start", in order, as a newcomer would type them.
 * `npm start` is the one line not run as written: the test starts the same server itself (`bin/tollgate
 * serve`, what `npm start` runs after the web build) on a free port and an empty data folder.
 */
export function readmeSteps(readme: string): string {
  const section = readme.slice(readme.indexOf('## First steps'), readme.indexOf('## Configuration'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.ok(blocks.length >= 2, 'the README has the shell blocks of First steps and Quick start');
  return blocks
    .join('\n')
    .split('\n')
    .filter((line) => !/^npm start\b/.test(line))
    .join('\n');
}

/** Starts `bin/tollgate serve` on `dataDir` and a free port; resolves with its base URL. */
async function serve(dataDir: string, env: NodeJS.ProcessEnv) {
  const child = spawn(join(root, 'bin/tollgate'), ['serve'], {
    cwd: root,
    env: { ...env, PORT: '0', LOG_LEVEL: 'info', SWEEP_INTERVAL_SECONDS: '0', DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { baseUrl, output } = await serveAddress(child);
  return {
    baseUrl,
    output,
    stop: () =>
      new Promise((resolve) =>
        child.exitCode !== null ? resolve(null) : (child.once('exit', resolve), child.kill('SIGTERM')),
      ),
  };
}

it("the README's First steps and Quick start, run as written top to bottom on an empty data folder, end with a chat", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-readme-data-'));
  const shellDir = mkdtempSync(join(tmpdir(), 'tollgate-readme-shell-'));
  // What a newcomer's shell has: none of the test setup's variables.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8' };
  const server = await serve(dataDir, env);
  try {
    const script = readmeSteps(readFileSync(join(root, 'README.md'), 'utf8'))
      .replaceAll('http://127.0.0.1:3000', server.baseUrl)
      .replaceAll('./bin/tollgate', join(root, 'bin/tollgate'));
    // -e and pipefail: any failing command (curl --fail-with-body on a 4xx) stops the run, as it would show.
    const result = spawnSync('bash', ['--noprofile', '--norc', '-euo', 'pipefail', '-c', script], {
      cwd: shellDir,
      env: { ...env, DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
    assert.equal(result.stderr, '', 'no warning and no error on the way');
    // curl prints each answer without a newline: they follow one another on stdout.
    assert.match(result.stdout, /^\{"balance":10\}/);
    assert.match(
      result.stdout,
      /"object":"chat\.completion".*"message":\{"role":"assistant","content":"Hello, Tollgate!"/,
    );
    const balance = Number(/\{"balance":([\d.]+),[^{}]*\}$/.exec(result.stdout)?.[1]);
    assert.ok(balance > 0 && balance < 10, result.stdout.slice(-300));
    assert.doesNotMatch(server.output(), /"level":(40|50)/, 'the server logged no warning or error');
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(shellDir, { recursive: true, force: true });
  }
});
