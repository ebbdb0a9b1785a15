import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig, type Config } from '../config.ts';
import { createLogger } from './logger.ts';
import { openDatabase } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createService, type Service } from '../service.ts';
import { allMigrations } from '../features.ts';
import { TestDatabaseSpace, TEST_POSTGRES_URL, selectedDatabases, request } from '../testing/harness.ts';
import { allTables } from '../testing/all-tables.ts';

/** A logger whose JSON lines the test reads back. */
function capturedLog(): {
  log: ReturnType<typeof createLogger>;
  lines: () => { level: number; msg: string; [key: string]: unknown }[];
} {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return {
    log: createLogger('info', stream),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
  };
}

/** A configuration with none of the operator secrets set (whatever the test runner's environment says). */
function bareConfig(env: Record<string, string>, overrides: Partial<Config> = {}): Config {
  return loadConfig({ PORT: '0', LOG_LEVEL: 'info', SWEEP_INTERVAL_SECONDS: '0', ...env }, overrides);
}

async function withService<T>(
  config: Config,
  log: ReturnType<typeof createLogger>,
  fn: (service: Service) => Promise<T>,
): Promise<T> {
  const service = await createService({ config, log, timers: false });
  try {
    return await fn(service);
  } finally {
    await service.close();
  }
}

const mode = (path: string) => statSync(path).mode & 0o777;
const securityWarnings = (lines: ReturnType<ReturnType<typeof capturedLog>['lines']>) =>
  lines.filter((line) => line.level === 40 && line.msg.startsWith('SECURITY'));

describe('instance secrets at rest', () => {
  it('a first start with no configuration keeps its secrets in a 0600 key file, not in the database, and creates the folder 0700 and the database files 0600', async () => {
    // The usual umask would leave new files world-readable (0644) unless the code says otherwise.
    const previousUmask = process.umask(0o022);
    const root = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
    try {
      const dataDir = join(root, 'data');
      const { log, lines } = capturedLog();
      const secrets = await withService(bareConfig({ DATA_DIR: dataDir }), log, async (service) => {
        const baseUrl = await service.listen(0);
        // Some writes, so that the WAL and shared-memory files exist.
        const created = await request(baseUrl, 'POST', '/api/admin/users', {
          token: service.ctx.secrets.adminTokens[0],
          body: { email: 'first@example.com', password: 'a-long-password', name: 'First' },
        });
        assert.equal(created.status, 201, 'the generated operator token works');
        // While it runs: SQLite removes the WAL and shared-memory files when the last connection closes.
        assert.equal(mode(dataDir), 0o700);
        const files = readdirSync(dataDir);
        for (const name of ['tollgate.db', 'tollgate.db-wal', 'tollgate.db-shm', 'secrets.json']) {
          assert.ok(files.includes(name), `${name} exists`);
          assert.equal(mode(join(dataDir, name)), 0o600, `${name} is 0600`);
        }
        return service.ctx.secrets;
      });

      const file = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'));
      assert.equal(Buffer.from(file.ENCRYPTION_KEY, 'base64').equals(secrets.encryptionKey), true);
      assert.equal(file.COOKIE_SECRET, secrets.cookieSecret);
      assert.deepEqual([file.TOLLGATE_ADMIN_TOKEN], secrets.adminTokens);

      const database = readdirSync(dataDir)
        .filter((name) => name.startsWith('tollgate.db'))
        .map((name) => readFileSync(join(dataDir, name)).toString('latin1'))
        .join('\n');
      assert.ok(database.includes('first@example.com'), 'the search sees what the database holds');
      for (const value of [file.ENCRYPTION_KEY, file.COOKIE_SECRET, file.TOLLGATE_ADMIN_TOKEN])
        assert.equal(database.includes(value), false, 'no operator secret is in the database');
      assert.deepEqual(securityWarnings(lines()), [], 'nothing to warn about');

      // A second start reads the same secrets back.
      const again = await withService(
        bareConfig({ DATA_DIR: dataDir }),
        capturedLog().log,
        async (service) => service.ctx.secrets,
      );
      assert.deepEqual(again, secrets);
    } finally {
      process.umask(previousUmask);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('secrets an earlier version generated into the database move to the key file and leave the database', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
    try {
      const config = bareConfig({ DATA_DIR: dataDir });
      const legacy = {
        encryption_key: randomBytes(32).toString('base64'),
        cookie_secret: randomBytes(32).toString('base64url'),
        admin_token: `tga_${randomBytes(32).toString('base64url')}`,
      };
      const database = openDatabase(config);
      await migrateToLatest(database.db, allMigrations(), config);
      await allTables(database.db)
        .insertInto('instance_secrets')
        .values(Object.entries(legacy).map(([name, value]) => ({ name, value, created_at: Date.now() })))
        .execute();
      await database.close();

      const { log, lines } = capturedLog();
      await withService(config, log, async (service) => {
        assert.equal(
          service.ctx.secrets.encryptionKey.toString('base64'),
          legacy.encryption_key,
          'API keys sealed before still open',
        );
        assert.equal(service.ctx.secrets.cookieSecret, legacy.cookie_secret);
        assert.deepEqual(service.ctx.secrets.adminTokens, [legacy.admin_token]);
        assert.deepEqual(
          await allTables(service.ctx.db)
            .selectFrom('instance_secrets')
            .select('name')
            .where('name', 'in', Object.keys(legacy))
            .execute(),
          [],
        );
      });
      const file = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'));
      assert.deepEqual(file, {
        ENCRYPTION_KEY: legacy.encryption_key,
        COOKIE_SECRET: legacy.cookie_secret,
        TOLLGATE_ADMIN_TOKEN: legacy.admin_token,
      });
      assert.equal(lines().filter((line) => line.level === 40 && /moved to the key file/.test(line.msg)).length, 1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('SECRETS_FILE puts the key file elsewhere (a folder of its own, 0700), away from the database folder', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
    try {
      const keyFile = join(root, 'keys', 'tollgate.json');
      const secrets = await withService(
        bareConfig({ DATA_DIR: join(root, 'data'), SECRETS_FILE: keyFile }),
        capturedLog().log,
        async (service) => service.ctx.secrets,
      );
      assert.equal(mode(keyFile), 0o600);
      assert.equal(mode(join(root, 'keys')), 0o700);
      assert.equal(JSON.parse(readFileSync(keyFile, 'utf8')).COOKIE_SECRET, secrets.cookieSecret);
      assert.equal(readdirSync(join(root, 'data')).includes('secrets.json'), false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the environment wins over the key file', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
    try {
      const fromFile = {
        ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        COOKIE_SECRET: randomBytes(32).toString('base64url'),
        TOLLGATE_ADMIN_TOKEN: `tga_${randomBytes(32).toString('base64url')}`,
      };
      writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify(fromFile), { mode: 0o600 });
      const adminToken = `tga_${randomBytes(32).toString('base64url')}`;
      await withService(
        bareConfig({ DATA_DIR: dataDir, TOLLGATE_ADMIN_TOKEN: adminToken }),
        capturedLog().log,
        async (service) => {
          assert.deepEqual(service.ctx.secrets.adminTokens, [adminToken]);
          assert.equal(service.ctx.secrets.cookieSecret, fromFile.COOKIE_SECRET);
          assert.equal(service.ctx.secrets.encryptionKey.toString('base64'), fromFile.ENCRYPTION_KEY);
        },
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a key file with a value that is not valid stops the start, saying what that secret must be, without showing it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-secrets-'));
    try {
      const valid = {
        ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        COOKIE_SECRET: randomBytes(32).toString('hex'),
        TOLLGATE_ADMIN_TOKEN: `tga_${randomBytes(32).toString('hex')}`,
      };
      const cases = [
        { ENCRYPTION_KEY: randomBytes(16).toString('base64'), expected: /32 random bytes in base64/ },
        { COOKIE_SECRET: 'too-short-secret', expected: /at least 32 characters/ },
        { TOLLGATE_ADMIN_TOKEN: 'tga_short', expected: /at least 24 characters/ },
      ];
      for (const { expected, ...bad } of cases) {
        const [name, value] = Object.entries(bad)[0]!;
        writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify({ ...valid, ...bad }), { mode: 0o600 });
        await assert.rejects(
          withService(bareConfig({ DATA_DIR: dataDir }), capturedLog().log, async () => undefined),
          (error: Error) => {
            assert.match(error.message, new RegExp(`^SECRETS_FILE: ${name} in .* is not a valid value: it must be `));
            assert.match(error.message, expected);
            assert.equal(error.message.includes(value), false, 'the bad value is not repeated');
            return true;
          },
        );
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  if (selectedDatabases().includes('postgres')) {
    it('on PostgreSQL, secrets generated into the database are announced once, at warn; a key file or the environment silences it', async () => {
      const space = new TestDatabaseSpace('postgres');
      await space.create();
      try {
        const first = capturedLog();
        const generated = await withService(bareConfig(space.env()), first.log, async (service) => service.ctx.secrets);
        const warnings = securityWarnings(first.lines());
        assert.equal(warnings.length, 1, 'one warning for all of them');
        assert.deepEqual(warnings[0].secrets, ['ENCRYPTION_KEY', 'COOKIE_SECRET', 'TOLLGATE_ADMIN_TOKEN']);

        const keyFile = join(space.dataDir, 'keys.json');
        await assert.rejects(
          withService(bareConfig({ ...space.env(), SECRETS_FILE: keyFile }), capturedLog().log, async () => undefined),
          /SECRETS_FILE: .*does not exist/,
        );
        writeFileSync(
          keyFile,
          JSON.stringify({
            ENCRYPTION_KEY: generated.encryptionKey.toString('base64'),
            COOKIE_SECRET: generated.cookieSecret,
          }),
          { mode: 0o600 },
        );
        const withFile = capturedLog();
        await withService(bareConfig({ ...space.env(), SECRETS_FILE: keyFile }), withFile.log, async (service) =>
          assert.deepEqual(service.ctx.secrets, generated),
        );
        assert.deepEqual(
          securityWarnings(withFile.lines()).map((line) => line.secrets),
          [['TOLLGATE_ADMIN_TOKEN']],
        );

        const configured = capturedLog();
        await withService(
          bareConfig({ ...space.env(), SECRETS_FILE: keyFile, TOLLGATE_ADMIN_TOKEN: generated.adminTokens[0] }),
          configured.log,
          async () => undefined,
        );
        assert.deepEqual(securityWarnings(configured.lines()), []);
      } finally {
        await space.drop();
      }
    });

    it('on PostgreSQL, a start whose named key file is missing is refused before a migration touches the database', async () => {
      const space = new TestDatabaseSpace('postgres');
      await space.create();
      try {
        const keyFile = join(space.dataDir, 'not-yet-copied.json');
        await assert.rejects(
          withService(bareConfig({ ...space.env(), SECRETS_FILE: keyFile }), capturedLog().log, async () => undefined),
          /SECRETS_FILE: .*not-yet-copied\.json does not exist/,
        );
        const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
        await client.connect();
        try {
          const { rows } = await client.query(
            'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
            [space.schema],
          );
          assert.deepEqual(rows, [], "no table was created, the migrations' own bookkeeping included");
        } finally {
          await client.end();
        }
      } finally {
        await space.drop();
      }
    });
  }
});
