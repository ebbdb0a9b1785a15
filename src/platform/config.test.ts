import { it, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigSchema, loadConfig } from '../config.ts';
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
