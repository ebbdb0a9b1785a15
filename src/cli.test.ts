import { it, describe, after, before } from 'node:test';
import pg from 'pg';
import { describeEachDatabase, selectedDatabases, TEST_POSTGRES_URL, TestDatabaseSpace } from './testing/harness.ts';
import { newTestClientKey, tokenEndpointErrorWithKey, type TestClientKey } from './oauth/testing.ts';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';

const root = new URL('..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
const env = {
  ...process.env,
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  DATABASE_URL: '',
  TOLLGATE_ADMIN_TOKEN: '',
  REPLICATE_WEBHOOK_SECRET: '',
};

function tollgate(...args: string[]): string {
  return execFileSync(process.execPath, ['src/cli.ts', ...args], {
    cwd: root,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('operator CLI', () => {
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('migrate, create-user, grant-credits, create-app and admin-token work on a fresh SQLite folder, with only the answer on stdout', () => {
    assert.match(tollgate('migrate'), /applied: 0001_platform_instance_secrets/);
    const user = JSON.parse(tollgate('create-user', '--email', 'cli@example.com', '--password', 'a-long-password'));
    assert.match(user.id, /^usr_/);
    assert.deepEqual(
      JSON.parse(tollgate('grant-credits', '--email', 'cli@example.com', '--amount', '2.5', '--reason', 'test'))
        .balance,
      2.5,
    );
    const app = JSON.parse(
      tollgate('create-app', '--name', 'CLI app', '--redirect-uri', 'http://127.0.0.1:8080/callback', '--confidential'),
    );
    assert.match(app.clientId, /^app_/);
    assert.match(app.clientSecret, /^tgs_/);
    const token = tollgate('admin-token').trim();
    assert.match(token, /^tga_[\w-]{40,}$/);
    assert.equal(tollgate('admin-token').trim(), token, 'the generated operator token is kept');
    const keyFile = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'));
    assert.equal(
      keyFile.TOLLGATE_ADMIN_TOKEN,
      token,
      'it is the one in the key file the service reads, not in the database',
    );
  });

  it('create-user --password-stdin reads the password from standard input, keeping it off the command line', () => {
    const run = (args: string[], input: string) =>
      spawnSync(process.execPath, ['src/cli.ts', 'create-user', ...args], { cwd: root, env, encoding: 'utf8', input });
    const made = run(['--email', 'stdin@example.com', '--password-stdin'], 'a-long-password-from-stdin\n');
    assert.equal(made.status, 0, made.stderr);
    assert.match(JSON.parse(made.stdout).id, /^usr_/);
    const both = run(['--email', 'both@example.com', '--password-stdin', '--password', 'a-long-password'], 'x\n');
    assert.notEqual(both.status, 0);
    assert.match(both.stderr, /--password-stdin or --password, not both/);
    const none = run(['--email', 'none@example.com'], '');
    assert.notEqual(none.status, 0);
    assert.match(none.stderr, /--password-stdin \(or --password P\) is required/);
    const empty = run(['--email', 'empty@example.com', '--password-stdin'], '\n');
    assert.match(empty.stderr, /standard input holds no password/);
  });

  it('sync-models from providers that are down reports what each did and exits 1, so a cron job notices', async () => {
    // It printed the errors and exited 0; a timeout read "The operation was aborted due to timeout".
    tollgate('migrate');
    const silent = createServer(() => {}).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const result = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['src/cli.ts', 'sync-models'], {
          cwd: root,
          env: {
            ...env,
            OPENAI_API_KEY: 'sk-test-down',
            OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
            OPENROUTER_API_KEY: 'sk-or-test-silent',
            OPENROUTER_BASE_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/api/v1`,
            UPSTREAM_TIMEOUT_MS: '1000',
          },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk) => (stdout += chunk));
        child.stderr.on('data', (chunk) => (stderr += chunk));
        child.on('close', (status) => resolve({ status, stdout, stderr }));
      });
      assert.equal(result.status, 1, result.stderr);
      const report = JSON.parse(result.stdout);
      const errors = Object.fromEntries(report.providers.map((p: any) => [p.provider, p.error]));
      assert.match(errors.openai, /unreachable/);
      assert.equal(errors.openrouter, 'The upstream provider did not answer within 1000 ms (UPSTREAM_TIMEOUT_MS).');
      assert.match(result.stderr, /^tollgate: sync-models: 2 of 2 providers failed \(openai, openrouter\)/);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('sync-models with no provider configured in its environment says so on stderr and exits 1, so a cron job notices', () => {
    // It printed {"providers": []} and exited 0: a shell without the server's keys looked like a sync that worked.
    tollgate('migrate');
    const bare: NodeJS.ProcessEnv = { ...env };
    for (const name of ['OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY', 'TOLLGATE_CONFIG'])
      delete bare[name];
    const result = spawnSync(process.execPath, ['src/cli.ts', 'sync-models'], {
      cwd: root,
      env: bare,
      encoding: 'utf8',
    });
    assert.equal(result.status, 1, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { providers: [] });
    assert.match(result.stderr, /^tollgate: sync-models: no provider is configured in this environment/);
    assert.match(result.stderr, /OPENAI_API_KEY, OPENROUTER_API_KEY or ANTHROPIC_API_KEY and TOLLGATE_CONFIG/);
  });

  it('run from another folder, every command opens the same database (an absolute DATA_DIR), and prints no warning', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'tollgate-cli-elsewhere-'));
    try {
      const run = (...args: string[]) =>
        spawnSync(join(root, 'bin/tollgate'), args, {
          cwd: elsewhere,
          env: { ...env, REPLICATE_API_TOKEN: 'r8_test_token' },
          encoding: 'utf8',
        });
      const token = run('admin-token');
      assert.equal(token.status, 0, token.stderr);
      assert.equal(token.stdout.trim(), tollgate('admin-token').trim());
      // Replicate configured without a webhook secret: a warning for a server, not for a one-shot command.
      assert.equal(token.stderr, '');
      const user = run('create-user', '--email', 'elsewhere@example.com', '--password', 'a-long-password');
      assert.equal(user.status, 0, user.stderr);
      assert.equal(user.stderr, '');
      assert.deepEqual(readdirSync(elsewhere), [], 'nothing is created in the working folder');
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('refuses to create a database where no server ever ran, naming the file it looked for', () => {
    const empty = mkdtempSync(join(tmpdir(), 'tollgate-cli-empty-'));
    try {
      const commands = [
        ['admin-token'],
        ['create-user', '--email', 'x@example.com', '--password', 'a-long-password'],
        ['grant-credits', '--email', 'x@example.com', '--amount', '1'],
        ['repack-sqlite'],
      ];
      for (const [command, ...args] of commands) {
        const result = spawnSync(process.execPath, ['src/cli.ts', command!, ...args], {
          cwd: root,
          env: { ...env, DATA_DIR: empty },
          encoding: 'utf8',
        });
        assert.equal(result.status, 1, command);
        assert.equal(result.stdout, '', command);
        assert.ok(result.stderr.includes(`no Tollgate database at ${join(empty, 'tollgate.db')}`), result.stderr);
        assert.match(result.stderr, /npm start/);
      }
      assert.deepEqual(readdirSync(empty), [], 'no database and no key file were created');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('repack-sqlite rewrites a database made with 4 KiB pages with 1 KiB pages, and prints what it did', () => {
    const older = mkdtempSync(join(tmpdir(), 'tollgate-cli-repack-'));
    try {
      const database = new DatabaseSync(join(older, 'tollgate.db'));
      database.exec(
        "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE kept (id TEXT PRIMARY KEY); INSERT INTO kept VALUES ('row');",
      );
      database.close();
      const run = () =>
        JSON.parse(
          execFileSync(process.execPath, ['src/cli.ts', 'repack-sqlite'], {
            cwd: root,
            env: { ...env, DATA_DIR: older },
            encoding: 'utf8',
          }),
        );
      const report = run();
      assert.deepEqual(
        [report.file, report.pageSizeBefore, report.pageSizeAfter],
        [join(older, 'tollgate.db'), 4096, 1024],
      );
      assert.equal(run().pageSizeBefore, 1024, 'a second run finds it done');
      const after = new DatabaseSync(join(older, 'tollgate.db'), { readOnly: true });
      assert.deepEqual({ ...after.prepare('SELECT id FROM kept').get() }, { id: 'row' });
      after.close();
      const onPostgres = spawnSync(process.execPath, ['src/cli.ts', 'repack-sqlite'], {
        cwd: root,
        env: { ...env, DATA_DIR: older, DATABASE_URL: 'postgres://127.0.0.1:1/none' },
        encoding: 'utf8',
      });
      assert.equal(onPostgres.status, 1);
      assert.match(onPostgres.stderr, /works on the SQLite database, and DATABASE_URL is set/);
    } finally {
      rmSync(older, { recursive: true, force: true });
    }
  });

  it('unset, DATA_DIR is the data folder of the project, not of the working folder', async () => {
    const { loadConfig, PROJECT_DATA_DIR } = await import('./config.ts');
    assert.equal(PROJECT_DATA_DIR, join(root, 'data'));
    assert.equal(loadConfig({}).DATA_DIR, PROJECT_DATA_DIR);
    assert.equal(loadConfig({ DATA_DIR: '/srv/tollgate' }).DATA_DIR, '/srv/tollgate');
  });

  const projectHasDatabase =
    existsSync(join(root, 'data', 'tollgate.db')) &&
    'the project folder has a database of its own (someone ran npm start here)';
  it(
    'a deployment that relied on the old default (./data of the working folder) is told to set DATA_DIR, not started on a new database',
    { skip: projectHasDatabase },
    () => {
      const elsewhere = mkdtempSync(join(tmpdir(), 'tollgate-cli-old-default-'));
      try {
        const old = join(elsewhere, 'data');
        execFileSync(process.execPath, ['src/cli.ts', 'migrate'], {
          cwd: root,
          env: { ...env, DATA_DIR: old },
          encoding: 'utf8',
          stdio: 'pipe',
        });
        const { DATA_DIR: _unset, ...withoutDataDir } = env;
        const result = spawnSync(process.execPath, [join(root, 'src/cli.ts'), 'admin-token'], {
          cwd: elsewhere,
          env: withoutDataDir,
          encoding: 'utf8',
        });
        assert.equal(result.status, 1);
        assert.ok(result.stderr.includes(`set DATA_DIR=${old}`), result.stderr);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    },
  );

  it('--help after a command prints how that command is used, and a wrong option is told with that usage', () => {
    const help = spawnSync(process.execPath, ['src/cli.ts', 'grant-credits', '--help'], {
      cwd: root,
      env,
      encoding: 'utf8',
    });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^Usage: tollgate grant-credits \(--user ID \| --email E\) --amount CREDITS/);
    const wrong = spawnSync(process.execPath, ['src/cli.ts', 'migrate', '--foo'], { cwd: root, env, encoding: 'utf8' });
    assert.equal(wrong.status, 1);
    assert.match(wrong.stderr, /Unknown option '--foo'/);
    assert.match(wrong.stderr, /Usage: tollgate migrate /);
  });

  it('without a command it lists the commands and starts no server; help, --help and -h list them on stdout', () => {
    // The timeout only bounds a CLI that serves instead of answering (it would listen until killed).
    const port = String(19000 + Math.floor(Math.random() * 900));
    const bare = spawnSync(process.execPath, ['src/cli.ts'], {
      cwd: root,
      env: { ...env, PORT: port },
      encoding: 'utf8',
      timeout: 15_000,
    });
    assert.equal(bare.error, undefined, `it served on port ${port} until killed instead of answering`);
    assert.equal(bare.status, 2);
    assert.equal(bare.stdout, '');
    assert.match(bare.stderr, /^Usage: tollgate <command>\n/);
    assert.match(bare.stderr, /^ {2}serve /m);
    for (const ask of ['help', '--help', '-h']) {
      const help = spawnSync(process.execPath, ['src/cli.ts', ask], { cwd: root, env, encoding: 'utf8' });
      assert.equal(help.status, 0, `${ask}: ${help.stderr}`);
      assert.match(help.stdout, /^Usage: tollgate <command>\n/, ask);
      assert.match(help.stdout, /^ {2}admin-token /m, ask);
    }
    const unknown = spawnSync(process.execPath, ['src/cli.ts', 'grant-credit'], { cwd: root, env, encoding: 'utf8' });
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /^tollgate: unknown command "grant-credit"\nUsage: tollgate <command>\n/);
  });

  it("serve on a port already in use stops with a sentence naming PORT, not Node's bare EADDRINUSE", async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const result = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['src/cli.ts', 'serve'], {
          cwd: root,
          env: { ...env, PORT: String(port), HOST: '127.0.0.1', SWEEP_INTERVAL_SECONDS: '0' },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr!.on('data', (chunk) => (stderr += chunk));
        child.on('exit', (status) => resolve({ status, stderr }));
      });
      assert.equal(result.status, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`^PORT: 127\\.0\\.0\\.1:${port} is already in use .*set PORT`, 'm'));
    } finally {
      taken.close();
    }
  });

  it('serve on a HOST that names no address stops with a sentence naming HOST, not getaddrinfo ENOTFOUND', () => {
    // A typo in HOST printed only "tollgate: getaddrinfo ENOTFOUND …", which names no setting.
    const result = spawnSync(process.execPath, ['src/cli.ts', 'serve'], {
      cwd: root,
      env: { ...env, HOST: 'no-such-host.invalid', PORT: '0', SWEEP_INTERVAL_SECONDS: '0' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /^HOST: no-such-host\.invalid is not a name this machine can resolve\. Set HOST to/m);
  });

  it('create-app without --redirect-uri is refused, as the operator API refuses an app with none', () => {
    const result = spawnSync(process.execPath, ['src/cli.ts', 'create-app', '--name', 'No callback'], {
      cwd: root,
      env,
      encoding: 'utf8',
    });
    assert.equal(result.status, 1, result.stdout);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /--redirect-uri is required/);
  });

  it('an invalid configuration stops with a message naming the variable', () => {
    assert.throws(
      () =>
        execFileSync(process.execPath, ['src/cli.ts', 'migrate'], {
          cwd: root,
          env: { ...env, PORT: 'eighty' },
          encoding: 'utf8',
          stdio: 'pipe',
        }),
      (error: any) => /PORT: .*integer/s.test(error.stderr),
    );
  });
});

// Key-pair apps from the CLI, on the database of a running server, which then authenticates them.
describeEachDatabase('operator CLI: key-pair apps (private_key_jwt)', (server) => {
  const files = mkdtempSync(join(tmpdir(), 'tollgate-cli-jwks-'));
  after(() => rmSync(files, { recursive: true, force: true }));
  const run = (args: string[], input?: string) =>
    spawnSync(process.execPath, ['src/cli.ts', ...args], {
      cwd: root,
      env: { ...env, ...server.space.env(), TOLLGATE_ADMIN_TOKEN: server.adminToken },
      encoding: 'utf8',
      input,
    });
  /** A file holding the public JWK Set of `keys`. */
  const jwksFile = (name: string, keys: TestClientKey[]) => {
    const file = join(files, name);
    writeFileSync(file, JSON.stringify({ keys: keys.map((key) => key.publicJwk) }));
    return file;
  };
  const createApp = (name: string, ...extra: string[]) =>
    run(['create-app', '--name', name, '--redirect-uri', 'http://127.0.0.1:9/callback', ...extra]);
  const appCount = async () => (await server.db.selectFrom('oauth_clients').select('client_id').execute()).length;

  it('create-app --jwks FILE registers an app with no secret whose method is private_key_jwt; rotate-app-keys replaces its keys, so the new key authenticates at the token endpoint and the old one no longer does', async () => {
    const [oldKey, newKey] = [await newTestClientKey(), await newTestClientKey()];
    const created = createApp('Backend with keys', '--jwks', jwksFile('old.json', [oldKey]));
    assert.equal(created.status, 0, created.stderr);
    const app = JSON.parse(created.stdout);
    assert.equal(app.clientSecret, undefined, 'a key-pair app gets no secret');
    assert.equal(app.tokenEndpointAuthMethod, 'private_key_jwt');
    assert.equal(
      await tokenEndpointErrorWithKey(server, app.clientId, oldKey),
      'invalid_grant',
      'the key authenticates',
    );
    assert.equal(await tokenEndpointErrorWithKey(server, app.clientId, newKey), 'invalid_client');

    const rotated = run(['rotate-app-keys', '--client-id', app.clientId, '--jwks', jwksFile('new.json', [newKey])]);
    assert.equal(rotated.status, 0, rotated.stderr);
    assert.deepEqual(JSON.parse(rotated.stdout), { clientId: app.clientId, jwks: { keys: [newKey.publicJwk] } });
    assert.equal(await tokenEndpointErrorWithKey(server, app.clientId, newKey), 'invalid_grant');
    assert.equal(await tokenEndpointErrorWithKey(server, app.clientId, oldKey), 'invalid_client');

    // `-` reads the set from standard input, as a pipe from a key tool gives it.
    const piped = run(
      ['rotate-app-keys', '--client-id', app.clientId, '--jwks', '-'],
      readFileSync(jwksFile('both.json', [oldKey, newKey]), 'utf8'),
    );
    assert.equal(piped.status, 0, piped.stderr);
    assert.equal(await tokenEndpointErrorWithKey(server, app.clientId, oldKey), 'invalid_grant');
  });

  it("a --jwks file that is missing or not JSON is the CLI's own message naming it, a key set the server refuses is the operator API's 400 text; nothing is registered or replaced", async () => {
    const key = await newTestClientKey();
    const before = await appCount();
    const missing = join(files, 'no-such.json');
    const notJson = join(files, 'not.json');
    writeFileSync(notJson, '-----BEGIN PUBLIC KEY-----');
    const privateKey = join(files, 'private.json');
    const { d } = await crypto.subtle.exportKey('jwk', key.privateKey);
    writeFileSync(privateKey, JSON.stringify({ keys: [{ ...key.publicJwk, d }] }));

    const refusals: Array<[string[], RegExp]> = [
      [['--jwks', missing], new RegExp(`^tollgate: --jwks: cannot read ${missing} \\(ENOENT`, 'm')],
      [
        ['--jwks', notJson],
        new RegExp(`^tollgate: --jwks: ${notJson} is not JSON \\(.*\\); it must hold a JWK Set`, 'm'),
      ],
      [['--jwks', privateKey], /^tollgate: jwks\.keys\[0\].*private key material/m],
    ];
    for (const [args, message] of refusals) {
      const result = createApp('Refused', ...args);
      assert.equal(result.status, 1, result.stdout);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, message);
    }
    assert.equal(await appCount(), before, 'nothing was registered');

    const secretApp = JSON.parse(createApp('With a secret', '--confidential').stdout);
    const keyFile = jwksFile('key.json', [key]);
    for (const [args, message] of [
      [
        ['--client-id', secretApp.clientId, '--jwks', keyFile],
        /^tollgate: This app does not authenticate with private_key_jwt/m,
      ],
      [['--client-id', 'app_nosuch', '--jwks', keyFile], /^tollgate: no app with client id app_nosuch$/m],
      [['--client-id', secretApp.clientId, '--jwks', missing], /^tollgate: --jwks: cannot read/m],
      [['--jwks', keyFile], /^tollgate: --client-id is required/m],
    ] as Array<[string[], RegExp]>) {
      const result = run(['rotate-app-keys', ...args]);
      assert.equal(result.status, 1, result.stdout);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, message);
    }
    const stored = await server.db
      .selectFrom('oauth_clients')
      .select(['jwks', 'client_secret_hash'])
      .where('client_id', '=', secretApp.clientId)
      .executeTakeFirstOrThrow();
    assert.equal(stored.jwks, null, 'the secret app was left as it was');
    assert.ok(stored.client_secret_hash);
  });
});

describe(
  'operator CLI on PostgreSQL',
  { skip: !selectedDatabases().includes('postgres') && 'TEST_DATABASES has no postgres' },
  () => {
    const space = new TestDatabaseSpace('postgres');
    const absent = `${space.schema}_absent`;
    const pgEnv = { ...env, ...space.env() };
    const run = (schema: string, ...args: string[]) =>
      spawnSync(process.execPath, ['src/cli.ts', ...args], {
        cwd: root,
        env: { ...pgEnv, DATABASE_SCHEMA: schema },
        encoding: 'utf8',
      });
    const query = async (text: string, values: unknown[]) => {
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      try {
        return (await client.query(text, values)).rows;
      } finally {
        await client.end();
      }
    };
    before(() => space.create());
    after(async () => {
      await space.drop();
      await query(`DROP SCHEMA IF EXISTS "${absent}" CASCADE`, []);
    });

    it('refuses a schema where no server ever ran, naming it, and creates nothing there; after migrate it works', async () => {
      const commands = [
        ['admin-token'],
        ['create-user', '--email', 'x@example.com', '--password', 'a-long-password'],
        ['grant-credits', '--email', 'x@example.com', '--amount', '1'],
        ['create-app', '--name', 'A', '--redirect-uri', 'http://127.0.0.1:8080/cb'],
        ['sync-models'],
      ];
      for (const schema of [space.schema, absent]) {
        for (const args of commands) {
          const result = run(schema, ...args);
          assert.equal(result.status, 1, `${args[0]}: ${result.stdout}`);
          assert.equal(result.stdout, '', args[0]);
          assert.ok(result.stderr.includes(`no Tollgate database in PostgreSQL schema "${schema}"`), result.stderr);
          assert.match(result.stderr, /tollgate migrate/);
        }
      }
      const tables = await query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [
        space.schema,
      ]);
      assert.deepEqual(tables, [], 'no tables were created in the empty schema');
      const schemas = await query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [absent]);
      assert.deepEqual(schemas, [], 'the schema that did not exist was not created');
      assert.equal(run(space.schema, 'migrate').status, 0);
      const token = run(space.schema, 'admin-token');
      assert.equal(token.status, 0, token.stderr);
      assert.match(token.stdout.trim(), /^tga_/);
    });
  },
);

describe('serve with a database or Redis it cannot reach', () => {
  /** Starts `serve` with `extra` and returns what it printed once it stopped; fails the test if it keeps running. */
  function serveFails(extra: Record<string, string>): string {
    const result = spawnSync(process.execPath, ['src/cli.ts', 'serve'], {
      cwd: root,
      env: { ...env, PORT: '0', ...extra },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.notEqual(result.status, 0, `serve kept running or succeeded: ${result.stdout}${result.stderr}`);
    assert.equal(result.signal, null, 'serve did not stop by itself');
    return result.stderr;
  }

  it('an unreachable PostgreSQL stops the start with a message naming DATABASE_URL and what to check, no stack trace', () => {
    const stderr = serveFails({ DATABASE_URL: 'postgres://postgres:s3cret@127.0.0.1:1/test' });
    assert.match(stderr, /DATABASE_URL: cannot connect to PostgreSQL at 127\.0\.0\.1:1/);
    assert.match(stderr, /check that PostgreSQL runs/i);
    assert.doesNotMatch(stderr, /s3cret/, 'the password is printed');
    assert.doesNotMatch(stderr, /^\s+at /m, 'a stack trace is printed');
  });

  it('migrate (the release step) on an unreachable PostgreSQL names DATABASE_URL and what to check, as serve does', () => {
    const result = spawnSync(process.execPath, ['src/cli.ts', 'migrate'], {
      cwd: root,
      env: { ...env, DATABASE_URL: 'postgres://postgres:s3cret@127.0.0.1:1/test' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stdout);
    assert.match(result.stderr, /DATABASE_URL: cannot connect to PostgreSQL at 127\.0\.0\.1:1/);
    assert.match(result.stderr, /check that PostgreSQL runs/i);
    assert.doesNotMatch(result.stderr, /s3cret/, 'the password is printed');
  });

  it('an unreachable Redis stops the start with a message naming REDIS_URL and what to check, no stack trace', () => {
    const stderr = serveFails({ REDIS_URL: 'redis://:s3cret@127.0.0.1:1' });
    assert.match(stderr, /REDIS_URL: cannot connect to Redis at 127\.0\.0\.1:1/);
    assert.match(stderr, /check that Redis runs/i);
    assert.doesNotMatch(stderr, /s3cret/, 'the password is printed');
    assert.doesNotMatch(stderr, /^\s+at /m, 'a stack trace is printed');
    assert.doesNotMatch(stderr, /Unhandled error event/);
  });
});

describe('serve runtime settings', () => {
  it('names what serve still lacks, and keeps what the operator set on the command line, in NODE_OPTIONS or the environment', async () => {
    const { missingServeRuntime, SERVE_RUNTIME, SERVE_RUNTIME_MARK } = await import('./cli.ts');
    assert.deepEqual(missingServeRuntime([], {}), { nodeFlags: SERVE_RUNTIME.nodeFlags, env: SERVE_RUNTIME.env });
    assert.deepEqual(missingServeRuntime(['--max-semi-space-size=64'], {}).nodeFlags, ['--heap-growing-percent=20']);
    assert.deepEqual(
      missingServeRuntime([], { NODE_OPTIONS: '--max_semi_space_size=8 --heap-growing-percent=50' }).nodeFlags,
      [],
    );
    assert.equal(missingServeRuntime([], { MALLOC_MMAP_THRESHOLD_: '1048576' }).env.MALLOC_MMAP_THRESHOLD_, undefined);
    assert.deepEqual(Object.keys(missingServeRuntime([], { NODE_COMPILE_CACHE: '/elsewhere' }).env).sort(), [
      'MALLOC_ARENA_MAX',
      'MALLOC_MMAP_THRESHOLD_',
    ]);
    assert.deepEqual(missingServeRuntime([], { [SERVE_RUNTIME_MARK]: 'off' }), { nodeFlags: [], env: {} });
    // A profiler's timer would outlive execve and kill the new process with SIGPROF.
    assert.deepEqual(missingServeRuntime(['--cpu-prof', '--cpu-prof-dir=/tmp/x'], {}), { nodeFlags: [], env: {} });
  });

  it('takes the heap growth from TOLLGATE_HEAP_GROWTH_PERCENT in place of 20%, and refuses a value that is not a whole number', async () => {
    const { missingServeRuntime, HEAP_GROWTH_VARIABLE } = await import('./cli.ts');
    assert.deepEqual(missingServeRuntime([], { [HEAP_GROWTH_VARIABLE]: '50' }).nodeFlags, [
      '--max-semi-space-size=8',
      '--heap-growing-percent=50',
    ]);
    assert.deepEqual(missingServeRuntime([], { [HEAP_GROWTH_VARIABLE]: '0' }).nodeFlags, [
      '--max-semi-space-size=8',
      '--heap-growing-percent=0',
    ]);
    // A flag on the command line still wins over the variable.
    assert.deepEqual(missingServeRuntime(['--heap-growing-percent=30'], { [HEAP_GROWTH_VARIABLE]: '50' }).nodeFlags, [
      '--max-semi-space-size=8',
    ]);
    for (const bad of ['fifty', '-5', '12.5', '50%'])
      assert.throws(() => missingServeRuntime([], { [HEAP_GROWTH_VARIABLE]: bad }), /TOLLGATE_HEAP_GROWTH_PERCENT/);
  });

  it('re-executes serve onto a fresh server bundle once, with or without settings to apply, and never under a profiler', async () => {
    const { serveReexecution, servedCode, SERVE_RUNTIME, SERVE_RUNTIME_MARK, SERVE_CODE_MARK } =
      await import('./cli.ts');
    const fresh = () => ({ state: 'fresh', entry: '/app/dist/server/cli.js' }) as const;
    const stale = () => ({ state: 'stale', reason: 'the sources changed after it was built' }) as const;
    const absent = () => ({ state: 'absent' }) as const;
    const argv = ['/node', '/app/src/cli.ts', 'serve'];
    const settled = { ...SERVE_RUNTIME.env, NODE_OPTIONS: SERVE_RUNTIME.nodeFlags.join(' ') };

    // Nothing to apply (the operator gave every setting): the bundle alone is reason enough, and says so.
    const onto = serveReexecution([], argv, settled, fresh)!;
    assert.deepEqual(onto.args, ['/app/dist/server/cli.js', 'serve']);
    assert.equal(onto.env[SERVE_CODE_MARK], 'bundle');
    assert.equal(onto.env[SERVE_RUNTIME_MARK], undefined, 'no settings were applied');
    // Node's defaults asked for: still the bundle, without the settings.
    const off = serveReexecution([], argv, { [SERVE_RUNTIME_MARK]: 'off' }, fresh)!;
    assert.deepEqual(off.args, ['/app/dist/server/cli.js', 'serve']);
    assert.equal(off.env[SERVE_RUNTIME_MARK], 'off');
    // Nothing to apply and no fresh bundle: this process goes on, and its start-up line still says why it runs the
    // sources (it said only `source`).
    assert.equal(serveReexecution([], argv, settled, stale), null);
    assert.equal(serveReexecution([], argv, settled, absent), null);
    assert.match(servedCode(settled, stale), /^source \(server bundle stale: .*npm run build rebuilds it\)$/);
    assert.match(
      servedCode({ [SERVE_RUNTIME_MARK]: 'off' }, absent),
      /^source \(server bundle absent: npm run build makes it\)$/,
    );
    assert.equal(servedCode({ ...settled, [SERVE_CODE_MARK]: 'bundle' }, stale), 'bundle');

    // Settings to apply: the sources when the bundle is not fresh, with the reason for the start-up line.
    const withSettings = serveReexecution([], argv, {}, stale)!;
    assert.deepEqual(withSettings.args, [...SERVE_RUNTIME.nodeFlags, '/app/src/cli.ts', 'serve']);
    assert.equal(withSettings.env[SERVE_RUNTIME_MARK], 'applied');
    assert.match(withSettings.env[SERVE_CODE_MARK]!, /^source \(server bundle stale: .*npm run build rebuilds it\)$/);
    assert.match(serveReexecution([], argv, {}, absent)!.env[SERVE_CODE_MARK]!, /absent: npm run build makes it/);

    // Once chosen, the code stays: the re-executed process (or an operator's `source`) is not moved again.
    assert.equal(serveReexecution([], onto.args, onto.env, fresh), null);
    const operatorSource = serveReexecution([], argv, { [SERVE_CODE_MARK]: 'source' }, fresh)!;
    assert.equal(operatorSource.args.at(-2), '/app/src/cli.ts');
    assert.equal(operatorSource.env[SERVE_CODE_MARK], 'source');
    assert.equal(serveReexecution([], argv, { ...settled, [SERVE_CODE_MARK]: 'source' }, fresh), null);

    // A profiler's timer would outlive execve and kill the new process with SIGPROF.
    assert.equal(serveReexecution(['--cpu-prof'], argv, settled, fresh), null);
    assert.equal(serveReexecution(['--cpu-prof'], argv, {}, fresh), null);
  });

  // With a compile cache that has never seen the code, as on the first start after an upgrade: serve loads
  // the service once (stripping types), then once more from the cache.
  it(
    'serve replaces its own process (same pid) with the settings applied, and again to leave the TypeScript stripper behind',
    { skip: process.platform !== 'linux' },
    async () => {
      const { spawn } = await import('node:child_process');
      const { readFileSync, readdirSync } = await import('node:fs');
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-serve-runtime-'));
      const compileCache = join(dir, 'compile-cache');
      const serveEnv: Record<string, string | undefined> = {
        ...env,
        DATA_DIR: dir,
        PORT: '0',
        LOG_LEVEL: 'info',
        SWEEP_INTERVAL_SECONDS: '0',
        NODE_COMPILE_CACHE: compileCache,
      };
      // Whatever the test runner's own environment says, serve must find these unset and apply its defaults.
      for (const name of ['NODE_OPTIONS', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_ARENA_MAX', 'TOLLGATE_SERVE_RUNTIME'])
        delete serveEnv[name];
      // From the sources (a fresh server bundle would need no type stripping: server-bundle.test.ts).
      serveEnv.TOLLGATE_SERVE_CODE = 'source';
      const child = spawn(process.execPath, ['src/cli.ts', 'serve'], {
        cwd: root,
        env: serveEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        await new Promise<void>((resolve, reject) => {
          let out = '';
          child.stdout!.on('data', (chunk) => {
            out += chunk;
            if (out.includes('"url"')) resolve();
          });
          child.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
        });
        const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
        const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
        assert.ok(cmdline.includes('--max-semi-space-size=8'), cmdline.join(' '));
        assert.ok(cmdline.includes('--heap-growing-percent=20'), cmdline.join(' '));
        assert.ok(environ.includes('MALLOC_MMAP_THRESHOLD_=131072'));
        assert.ok(environ.includes('MALLOC_ARENA_MAX=1'));
        assert.ok(
          environ.includes('TOLLGATE_SERVE_RUNTIME=applied, from the compile cache'),
          environ.filter((line) => line.startsWith('TOLLGATE')).join(' '),
        );
        assert.ok(readdirSync(compileCache).length > 0);
      } finally {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
