import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import pg from 'pg';
import { selectedDatabases, startServeProcess, TEST_POSTGRES_URL, TestEnv } from '../../testing/harness.ts';
import { dumpPostgres } from './backup.ts';

const root = new URL('../../..', import.meta.url).pathname;
const run = promisify(execFile);

/** The environment of a CLI or serve process on `env`'s database. */
function processEnv(env: TestEnv, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: '',
    ...env.space.env(),
    TOLLGATE_ADMIN_TOKEN: env.adminToken,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

async function tollgate(env: TestEnv, extra: Record<string, string>, ...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, ['src/cli.ts', ...args], { cwd: root, env: processEnv(env, extra) });
  return JSON.parse(stdout);
}

/** Makes the database and the key file, as a first start does. */
async function initialize(env: TestEnv): Promise<void> {
  for (const command of ['migrate', 'admin-token'])
    await run(process.execPath, ['src/cli.ts', command], { cwd: root, env: processEnv(env) });
}

function hasCommand(name: string): boolean {
  return spawnSync(name, ['--version']).status === 0;
}

/** Every movement description in the wallet of `session`, newest first, through the dashboard API. */
async function movements(env: TestEnv, session: Awaited<ReturnType<TestEnv['createUser']>>): Promise<string[]> {
  const descriptions: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.dashboard(
      session,
      'GET',
      `/api/wallet/transactions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    assert.equal(page.status, 200, page.text);
    descriptions.push(...page.body.transactions.map((t: { description: string }) => t.description));
    cursor = page.body.nextCursor ?? undefined;
  } while (cursor);
  return descriptions;
}

for (const kind of selectedDatabases()) {
  describe(`tollgate backup and restore of a live server [${kind}]`, () => {
    it(
      'a backup taken while credits move holds every movement acknowledged before it began and is consistent; a server restored from it verifies its ledger and keeps its sessions',
      { skip: kind === 'postgres' && !(hasCommand('pg_dump') && hasCommand('pg_restore')) && 'no pg_dump here' },
      async () => {
        const env = new TestEnv(kind);
        const out = mkdtempSync(join(tmpdir(), 'tollgate-backup-'));
        await env.space.create();
        const extra: Record<string, string> = {};
        if (kind === 'postgres') {
          // On PostgreSQL the key file is named; the backup copies it as on SQLite.
          extra.SECRETS_FILE = join(env.space.dataDir, 'secrets.json');
          writeFileSync(
            extra.SECRETS_FILE,
            JSON.stringify({
              ENCRYPTION_KEY: randomBytes(32).toString('base64'),
              COOKIE_SECRET: randomBytes(32).toString('base64url'),
            }),
            { mode: 0o600 },
          );
        } else {
          // Some bulk, so that the copy takes long enough for writes to land while it runs.
          await initialize(env);
          const filler = new DatabaseSync(join(env.space.dataDir, 'tollgate.db'));
          filler.exec('CREATE TABLE zz_filler (body BLOB); BEGIN');
          const insert = filler.prepare('INSERT INTO zz_filler VALUES (randomblob(4000))');
          for (let i = 0; i < 5_000; i++) insert.run();
          filler.exec('COMMIT');
          filler.close();
        }
        let server = await startServeProcess(env, extra);
        let restored: TestEnv | null = null;
        try {
          env.baseUrl = server.baseUrl;
          const session = await env.createUser();
          // One movement after the other, each acknowledged before the next is sent.
          const acknowledged: { reason: string; at: number }[] = [];
          let moving = true;
          const mover = (async () => {
            for (let i = 0; moving; i++) {
              const moved = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
                amount: 1,
                reason: `m${i}`,
              });
              assert.equal(moved.status, 200, moved.text);
              acknowledged.push({ reason: `m${i}`, at: performance.now() });
            }
          })();
          while (acknowledged.length < 5) await new Promise((resolve) => setTimeout(resolve, 20));
          const began = performance.now();
          const target = join(out, 'tollgate.backup');
          const report = await tollgate(env, extra, 'backup', '--to', target);
          const ended = performance.now();
          const after = acknowledged.length;
          while (acknowledged.length < after + 3) await new Promise((resolve) => setTimeout(resolve, 20));
          moving = false;
          await mover;
          assert.ok(
            acknowledged.some((m) => m.at > began && m.at < ended),
            'credits moved while the backup ran',
          );

          assert.equal(report.file, target);
          assert.equal(report.secretsFile, `${target}.secrets.json`);
          assert.deepEqual(report.secretsNotInBackup, ['TOLLGATE_ADMIN_TOKEN']);
          for (const file of [target, `${target}.secrets.json`])
            assert.equal(statSync(file).mode & 0o777, 0o600, `${file} is for its owner only`);
          assert.deepEqual(
            readdirSync(out).sort(),
            ['tollgate.backup', 'tollgate.backup.secrets.json'],
            'no leftovers',
          );
          assert.equal(await server.stop(), 0);

          // Restore: SQLite into a fresh DATA_DIR with `tollgate restore`; PostgreSQL with pg_restore, as the README says.
          let restoredExtra = extra;
          if (kind === 'sqlite') {
            restored = new TestEnv('sqlite');
            restored.adminToken = env.adminToken;
            const done = await tollgate(restored, {}, 'restore', '--from', target);
            assert.equal(done.database, join(restored.space.dataDir, 'tollgate.db'));
            assert.deepEqual(
              readFileSync(join(restored.space.dataDir, 'secrets.json')),
              readFileSync(join(env.space.dataDir, 'secrets.json')),
            );
          } else {
            restored = env;
            const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
            await client.connect();
            await client.query(`DROP SCHEMA "${env.space.schema}" CASCADE`);
            await client.end();
            execFileSync('pg_restore', [
              '--exit-on-error',
              '--single-transaction',
              `--dbname=${TEST_POSTGRES_URL}`,
              target,
            ]);
            restoredExtra = { SECRETS_FILE: join(out, 'restored-secrets.json') };
            copyFileSync(`${target}.secrets.json`, restoredExtra.SECRETS_FILE!);
          }
          server = await startServeProcess(restored, restoredExtra);
          restored.baseUrl = server.baseUrl;

          const verify = await restored.admin('GET', '/api/admin/ledger/verify');
          assert.equal(verify.status, 200, verify.text);
          assert.equal(verify.body.ok, true, verify.text);
          // The session cookie made before the backup still works: the cookie secret came back with it.
          const kept = (await movements(restored, session)).filter((d) => /^m\d+$/.test(d)).reverse();
          const before = acknowledged.filter((m) => m.at < began).map((m) => m.reason);
          assert.deepEqual(kept.slice(0, before.length), before, 'every movement acknowledged before the backup began');
          assert.deepEqual(
            kept,
            kept.map((_, i) => `m${i}`),
            'a consistent snapshot: the movements up to one moment, none missing in between',
          );
          const balance = await restored.dashboard(session, 'GET', '/api/wallet/balance');
          assert.equal(balance.body.balance, kept.length, balance.text);

          if (kind === 'sqlite') {
            // A restore while a server has the database open changes nothing.
            const refused = spawnSync(process.execPath, ['src/cli.ts', 'restore', '--from', target], {
              cwd: root,
              env: processEnv(restored),
              encoding: 'utf8',
            });
            assert.equal(refused.status, 1);
            assert.match(refused.stderr, /open in another process \(a running server\?\): stop it/);
            assert.deepEqual(
              readdirSync(restored.space.dataDir).filter((f) => f.includes('before-restore')),
              [],
            );
          }
        } finally {
          await server.stop();
          if (restored && restored !== env) await restored.space.drop();
          await env.space.drop();
          rmSync(out, { recursive: true, force: true });
        }
      },
    );
  });
}

describe('tollgate backup and restore refuse what would lose data', () => {
  it('backup refuses to overwrite a backup unless --force, writes its files 0600 whatever the umask, and leaves no temporary file', async () => {
    const env = new TestEnv('sqlite');
    const out = mkdtempSync(join(tmpdir(), 'tollgate-backup-'));
    try {
      await initialize(env);
      const target = join(out, 'nightly.db');
      const backup = (...more: string[]) =>
        spawnSync(
          'sh',
          ['-c', 'umask 022 && exec "$0" "$@"', process.execPath, 'src/cli.ts', 'backup', '--to', target, ...more],
          { cwd: root, env: processEnv(env), encoding: 'utf8' },
        );
      assert.equal(backup().status, 0);
      for (const file of [target, `${target}.secrets.json`]) assert.equal(statSync(file).mode & 0o777, 0o600);
      const first = statSync(target).ino;
      const again = backup();
      assert.equal(again.status, 1);
      assert.match(again.stderr, /nightly\.db and .*nightly\.db\.secrets\.json already exist: pass --force/);
      assert.equal(statSync(target).ino, first, 'the first backup is untouched');
      const forced = backup('--force');
      assert.equal(forced.status, 0, forced.stderr);
      assert.notEqual(statSync(target).ino, first);
      assert.equal(statSync(target).mode & 0o777, 0o600);
      assert.deepEqual(readdirSync(out).sort(), ['nightly.db', 'nightly.db.secrets.json']);

      // A restore without the key file it was made with is refused, and changes nothing.
      rmSync(`${target}.secrets.json`);
      const fresh = new TestEnv('sqlite');
      try {
        const refused = spawnSync(process.execPath, ['src/cli.ts', 'restore', '--from', target], {
          cwd: root,
          env: processEnv(fresh),
          encoding: 'utf8',
        });
        assert.equal(refused.status, 1);
        assert.match(refused.stderr, /no key file at .*nightly\.db\.secrets\.json.*--secrets/);
        assert.deepEqual(readdirSync(fresh.space.dataDir), []);
        // Not a Tollgate database: refused too.
        writeFileSync(join(out, 'other.db'), '');
        const other = spawnSync(
          process.execPath,
          [
            'src/cli.ts',
            'restore',
            '--from',
            join(out, 'other.db'),
            '--secrets',
            join(env.space.dataDir, 'secrets.json'),
          ],
          { cwd: root, env: processEnv(fresh), encoding: 'utf8' },
        );
        assert.equal(other.status, 1);
        assert.match(other.stderr, /not a Tollgate database/);
        assert.deepEqual(readdirSync(fresh.space.dataDir), []);
      } finally {
        await fresh.space.drop();
      }
    } finally {
      await env.space.drop();
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('backup --force to the live database or the key file is refused and replaces neither', async () => {
    const env = new TestEnv('sqlite');
    try {
      await initialize(env);
      const database = join(env.space.dataDir, 'tollgate.db');
      const keyFile = join(env.space.dataDir, 'secrets.json');
      const before = { database: statSync(database).ino, keyFile: readFileSync(keyFile, 'utf8') };
      // "already exists: pass --force" is what an operator who typed the data folder is told first.
      for (const [to, what] of [
        [database, /is the database the server uses/],
        [`${database}-wal`, /is the database the server uses/],
        [keyFile, /is the key file/],
      ] as const) {
        const forced = spawnSync(process.execPath, ['src/cli.ts', 'backup', '--to', to, '--force'], {
          cwd: root,
          env: processEnv(env),
          encoding: 'utf8',
        });
        assert.equal(forced.status, 1, `${to}: ${forced.stdout}`);
        assert.match(forced.stderr, what);
        assert.match(forced.stderr, /Nothing was written/);
      }
      assert.equal(statSync(database).ino, before.database, 'the live database is the same file');
      assert.equal(readFileSync(keyFile, 'utf8'), before.keyFile, 'the key file is untouched');
      assert.deepEqual(
        readdirSync(env.space.dataDir).filter((f) => f.endsWith('.tmp') || f.includes('.secrets.json')),
        [],
      );
    } finally {
      await env.space.drop();
    }
  });

  it('pg_dump gets the password of DATABASE_URL in PGPASSWORD, never on its command line, wherever the URL puts it', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-pgdump-'));
    try {
      // A stand-in pg_dump that writes what it was given (its output is the dump file).
      const fake = join(folder, 'pg_dump');
      writeFileSync(fake, '#!/bin/sh\nprintf \'arg %s\\n\' "$@"\necho "PGPASSWORD=$PGPASSWORD"\n', { mode: 0o700 });
      for (const url of [
        'postgres://tollgate:s3cret%21@127.0.0.1:5432/app?sslmode=disable',
        'postgres://tollgate@127.0.0.1:5432/app?password=s3cret%21&sslmode=disable',
      ]) {
        const dump = join(folder, 'dump');
        writeFileSync(dump, '', { mode: 0o600 });
        await dumpPostgres({ DATABASE_URL: url, DATABASE_SCHEMA: 'tollgate' }, dump, fake);
        const seen = readFileSync(dump, 'utf8');
        assert.match(seen, /^PGPASSWORD=s3cret!$/m, url);
        const args = seen.split('\n').filter((line) => line.startsWith('arg '));
        assert.ok(
          args.some((arg) => arg.includes('sslmode=disable')),
          seen,
        );
        assert.ok(!args.some((arg) => /s3cret/.test(arg)), `the password is on the command line: ${seen}`);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
