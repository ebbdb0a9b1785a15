import { it, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigSchema, loadConfig, PROJECT_DATA_DIR } from '../config.ts';
import { ERROR_CODES } from './errors.ts';

describe('configuration', () => {
  it('defaults serve SQLite on 127.0.0.1:3000', () => {
    const config = loadConfig({});
    assert.equal(config.PORT, 3000);
    assert.equal(config.PUBLIC_BASE_URL, 'http://127.0.0.1:3000');
    assert.equal(config.DATABASE_URL, undefined);
  });

  it('an upstream answer may take 10 minutes to begin and a stream may pause 10 minutes, as the official SDKs wait', () => {
    // A reasoning model answers a non-streaming call, or stays silent in a stream, for minutes; the OpenAI and
    // Anthropic SDKs wait 10 minutes. The old 120 s deadline answered such a call 504 at 2 minutes.
    const config = loadConfig({});
    assert.equal(config.UPSTREAM_TIMEOUT_MS, 600_000);
    assert.equal(config.UPSTREAM_IDLE_TIMEOUT_MS, 600_000);
  });

  it('a bad value stops the start with a message naming the variable and what it expects', () => {
    assert.throws(() => loadConfig({ PORT: 'eighty' }), /PORT: .*integer.*TCP port/s);
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://db' }), /DATABASE_URL: .*PostgreSQL connection URL/s);
    assert.throws(() => loadConfig({ REPLICATE_WEBHOOK_SECRET: 'not-a-secret' }), /REPLICATE_WEBHOOK_SECRET/);
    // A choice among fixed values lists them, in one line.
    assert.throws(
      () => loadConfig({ LOG_LEVEL: 'verbose' }),
      (error: Error) =>
        error.message ===
        'Invalid configuration:\n  LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
    );
  });

  it("an upstream's base URL without http(s):// (a copied host name) stops the start, naming it, instead of failing each call", () => {
    const names = ['OPENAI_BASE_URL', 'OPENROUTER_BASE_URL', 'ANTHROPIC_BASE_URL', 'REPLICATE_BASE_URL'] as const;
    for (const name of names) {
      for (const value of ['api.example.com/v1', 'ftp://api.example.com', 'https://', 'https://api.example.com/ v1']) {
        assert.throws(
          () => loadConfig({ [name]: value }),
          new RegExp(
            `${name}: is not valid — expected: .*http\\(s\\) URL.*\\(got "${value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"\\)`,
            's',
          ),
          `${name}=${value}`,
        );
      }
      assert.equal(loadConfig({ [name]: 'http://127.0.0.1:8080/v1' })[name], 'http://127.0.0.1:8080/v1');
    }
  });

  it('a bad secret stops the start without the message showing it: keys, tokens, a password in a URL, a provider key', () => {
    const cases: [Record<string, string>, RegExp, string][] = [
      [{ STRIPE_SECRET_KEY: 'sk_live_51Hsecretvalue ' }, /STRIPE_SECRET_KEY: .*not shown/, 'sk_live_51Hsecretvalue'],
      [{ COOKIE_SECRET: 'short-cookie-secret' }, /COOKIE_SECRET: .*fewer than 32 characters/, 'short-cookie-secret'],
      [{ ENCRYPTION_KEY: 'not-base64-key!' }, /ENCRYPTION_KEY: /, 'not-base64-key!'],
      [{ TOLLGATE_ADMIN_TOKEN: 'tga_short' }, /TOLLGATE_ADMIN_TOKEN: /, 'tga_short'],
      [{ STRIPE_WEBHOOK_SECRET: 'whsec_abc def' }, /STRIPE_WEBHOOK_SECRET: /, 'whsec_abc def'],
      [{ REPLICATE_WEBHOOK_SECRET: 'not-a-secret-value' }, /REPLICATE_WEBHOOK_SECRET: /, 'not-a-secret-value'],
      [
        { DATABASE_URL: 'postgresql+asyncpg://tollgate:hunter2-password@db.internal/tollgate' },
        /DATABASE_URL: .*postgresql\+asyncpg:\/\/tollgate:\*\*\*@db\.internal\/tollgate/,
        'hunter2-password',
      ],
    ];
    for (const [env, names, secret] of cases)
      assert.throws(
        () => loadConfig(env),
        (error: Error) => names.test(error.message) && !error.message.includes(secret),
        `${Object.keys(env)[0]}: the message names it and does not show the value`,
      );
    assert.throws(
      () =>
        loadConfig(
          {},
          {
            providers: [
              { name: 'groq', apiKey: 'gsk_provider-secret-key' } as unknown as { name: string; baseUrl: string },
            ],
          },
        ),
      (error: Error) => /providers\/0/.test(error.message) && !error.message.includes('gsk_provider-secret-key'),
    );
  });

  it("an extra provider's bad field is told with what that field expects and its own value, not the whole list's", () => {
    const refusal = (provider: Record<string, unknown>) => {
      try {
        loadConfig({}, { providers: [provider as { name: string; baseUrl: string }] });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    assert.equal(
      refusal({ name: 'local', baseUrl: '127.0.0.1:8000/v1', apiKey: 'sk-provider-secret' }),
      'Invalid configuration:\n  providers/0/baseUrl: is not valid — expected: the upstream\'s OpenAI-compatible base URL, an http(s) URL such as `http://127.0.0.1:8000/v1` (got "127.0.0.1:8000/v1")',
    );
    assert.equal(
      refusal({ name: 'Local AI', baseUrl: 'http://127.0.0.1:8000/v1' }),
      'Invalid configuration:\n  providers/0/name: is not valid — expected: the provider name catalogue models refer to: lower-case letters, digits and dashes (got "Local AI")',
    );
    assert.doesNotMatch(refusal({ name: 'local', baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 42 }), /42/);
  });

  it('the TOLLGATE_CONFIG file is read, and a name in it that is no setting (a typo) stops the start, naming it', () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
    try {
      const file = join(folder, 'tollgate.json');
      writeFileSync(
        file,
        JSON.stringify({ PORT: 19_001, providers: [{ name: 'groq', baseUrl: 'http://127.0.0.1:19002/v1' }] }),
      );
      const config = loadConfig({ TOLLGATE_CONFIG: file });
      assert.equal(config.PORT, 19_001);
      assert.deepEqual(
        config.providers?.map((provider) => provider.name),
        ['groq'],
      );
      // Ignored, a misspelt name left its setting at its default without a word: no provider, the wrong port.
      writeFileSync(file, JSON.stringify({ PORTT: 19_001, OPENAI_KEY: 'sk-x', provider: [] }));
      assert.throws(
        () => loadConfig({ TOLLGATE_CONFIG: file }),
        (error: Error) =>
          error.name === 'ConfigError' &&
          error.message.startsWith(
            `TOLLGATE_CONFIG: ${file} has names that are no setting: PORTT, OPENAI_KEY, provider`,
          ) &&
          !error.message.includes('sk-x'),
      );
      writeFileSync(file, '[]');
      assert.throws(() => loadConfig({ TOLLGATE_CONFIG: file }), /TOLLGATE_CONFIG: .* must hold a JSON object/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a whole number setting refuses a fraction or another notation instead of truncating it', () => {
    // "1.5" became 1 and "0x10" 16 without a word (HOLD_TTL_SECONDS=10.5 was refused as "got 10").
    for (const [name, value] of [
      ['PORT', '1.5'],
      ['SWEEP_INTERVAL_SECONDS', '2.9'],
      ['HOLD_TTL_SECONDS', '10.5'],
      ['PORT', '0x10'],
      ['PORT', '3e3'],
    ])
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: Error) =>
          error.message.includes(`${name}: must be integer`) && error.message.includes(`(got "${value}")`),
        `${name}=${value}`,
      );
    assert.equal(loadConfig({ PORT: ' 3001 ' }).PORT, 3001);
    assert.equal(loadConfig({ SWEEP_INTERVAL_SECONDS: '0' }).SWEEP_INTERVAL_SECONDS, 0);
  });

  it('a duration a timer waits is refused past what a Node timer holds (2^31 - 1 ms), not run every millisecond', () => {
    // Node runs a longer timer after 1 ms: UPSTREAM_TIMEOUT_MS=3000000000 answered every call 504 at once, and
    // SWEEP_INTERVAL_SECONDS=3000000 ran the background jobs without pause.
    const timers: [string, number][] = [
      ['SHUTDOWN_GRACE_MS', 1],
      ['UPSTREAM_TIMEOUT_MS', 1],
      ['UPSTREAM_IDLE_TIMEOUT_MS', 1],
      ['SWEEP_INTERVAL_SECONDS', 1000],
      ['WEBHOOK_DELIVERY_INTERVAL_SECONDS', 1000],
      ['HOLD_TTL_SECONDS', 1000],
      ['HTTP_REQUEST_TIMEOUT_SECONDS', 1000],
      ['HTTP_UPLOAD_TIMEOUT_SECONDS', 1000],
      ['HTTP_HEADERS_TIMEOUT_SECONDS', 1000],
      ['HTTP_KEEPALIVE_TIMEOUT_SECONDS', 1000],
    ];
    for (const [name, msPerUnit] of timers) {
      const largest = Math.floor((2 ** 31 - 1) / msPerUnit);
      assert.equal(loadConfig({ [name]: String(largest) })[name as 'PORT'], largest, `${name} takes ${largest}`);
      assert.throws(
        () => loadConfig({ [name]: String(largest + 1) }),
        new RegExp(`${name}: must be <= ${largest}`),
        `${name} refuses ${largest + 1}`,
      );
    }
  });

  it("the README's configuration table lists every setting, with the default the schema gives it", () => {
    // Each row: the variable(s) in backticks, then the default(s) (`A` / `B` rows pair their defaults).
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |')).split('\n').slice(2);
    const documented = new Map<string, string>();
    for (const row of table) {
      if (!row.startsWith('|')) break;
      const [names, defaults] = row.split(' | ').map((cell) => cell.replace(/^\| ?/, ''));
      const variables = [...names!.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1]!);
      const values = defaults!.split(' / ');
      variables.forEach((name, i) => documented.set(name, values.length === variables.length ? values[i]! : defaults!));
    }
    const settings = Object.keys(ConfigSchema.properties).filter((name) => name !== 'providers');
    assert.deepEqual([...documented.keys()].sort(), settings.sort(), 'the table and the schema name the same settings');
    const config = loadConfig({}) as Record<string, unknown>;
    // Defaults that are not the schema's value as such: said in words, or computed from other settings.
    const described: Record<string, unknown> = {
      DATA_DIR: PROJECT_DATA_DIR, // "`data/` in the project folder"
      PUBLIC_BASE_URL: `http://${config.HOST}:${config.PORT}`, // "`http://HOST:PORT`"
      STRIPE_API_BASE: undefined, // the Stripe SDK's own default, `https://api.stripe.com`
    };
    for (const [name, cell] of documented) {
      const literal = /^`([^`]*)`$/.exec(cell.trim())?.[1];
      if (name in described) assert.equal(config[name], described[name], name);
      else if (literal === undefined) assert.equal(config[name], undefined, `${name}: the README says "${cell}"`);
      else assert.equal(String(config[name]), literal, `${name}: the README says ${cell}`);
    }
  });

  it('the README documents every configuration variable and every error code', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const name of Object.keys(ConfigSchema.properties)) {
      if (name === 'providers') continue;
      assert.ok(readme.includes(`\`${name}\``), `README lacks ${name}`);
    }
    for (const code of Object.keys(ERROR_CODES))
      assert.ok(readme.includes(`\`${code}\``), `README lacks error code ${code}`);
  });
});
