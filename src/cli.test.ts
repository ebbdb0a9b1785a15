import { it, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: '', TOLLGATE_ADMIN_TOKEN: '', REPLICATE_WEBHOOK_SECRET: '' };

function tollgate(...args: string[]): string {
  return execFileSync(process.execPath, ['src/cli.ts', ...args], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('operator CLI', () => {
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('migrate, create-user, grant-credits, create-app and admin-token work on a fresh SQLite folder, with only the answer on stdout', () => {
    assert.match(tollgate('migrate'), /applied: 0001_platform_instance_secrets/);
    const user = JSON.parse(tollgate('create-user', '--email', 'cli@example.com', '--password', 'a-long-password'));
    assert.match(user.id, /^usr_/);
    assert.deepEqual(JSON.parse(tollgate('grant-credits', '--email', 'cli@example.com', '--amount', '2.5', '--reason', 'test')).balance, 2.5);
    const app = JSON.parse(tollgate('create-app', '--name', 'CLI app', '--redirect-uri', 'http://127.0.0.1:8080/callback', '--confidential'));
    assert.match(app.clientId, /^app_/);
    assert.match(app.clientSecret, /^tgs_/);
    const token = tollgate('admin-token').trim();
    assert.match(token, /^tga_[\w-]{40,}$/);
    assert.equal(tollgate('admin-token').trim(), token, 'the generated operator token is kept');
  });

  it('an invalid configuration stops with a message naming the variable', () => {
    assert.throws(() => execFileSync(process.execPath, ['src/cli.ts', 'migrate'], { cwd: root, env: { ...env, PORT: 'eighty' }, encoding: 'utf8', stdio: 'pipe' }), (error: any) => /PORT: .*integer/s.test(error.stderr));
  });
});
