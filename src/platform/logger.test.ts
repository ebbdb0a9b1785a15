import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { createLogger, REDACTED_PATHS } from './logger.ts';

/** The lines a logger writes, without their timestamps, once `write` has logged through it. */
function linesOf(make: (stream: PassThrough) => pino.Logger, write: (log: pino.Logger) => void): string[] {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk) => chunks.push(String(chunk)));
  write(make(stream));
  stream.end();
  return chunks
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/"time":\d+,/, ''));
}

describe('logger', () => {
  it('writes the very lines pino writes with the same redaction, secrets redacted at any depth of `*.x`', () => {
    const error = Object.assign(new Error('boom'), { token: 'error-secret' });
    const write = (log: pino.Logger) => {
      const child = log.child({ reqId: 'req-1', db: { password: 'child-secret', host: 'h' }, n: 3 });
      child.info(
        {
          method: 'POST',
          quoted: 'a "b" \\ c\n\u0001 é \ud800',
          long: 'x'.repeat(100),
          count: 12.5,
          infinite: Infinity,
          flag: false,
          big: 10n,
          missing: undefined,
          user: { name: 'n', password: 'user-secret', nested: { token: 'deep' } },
          oauth: { access_token: 'access-secret', refresh_token: 'refresh-secret', key: 'key-secret' },
          req: { headers: { authorization: 'Bearer header-secret', host: 'h' } },
        },
        'request',
      );
      child.warn('plain %s', 'message');
      child.error({ err: error }, 'failed');
    };
    const reference = (stream: PassThrough) =>
      pino(
        {
          level: 'info',
          redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
          base: { service: 'tollgate' },
        },
        stream,
      );
    const lines = linesOf((stream) => createLogger('info', stream), write);
    assert.deepEqual(lines, linesOf(reference, write));
    const text = lines.join('\n');
    for (const secret of [
      'child-secret',
      'user-secret',
      'access-secret',
      'refresh-secret',
      'key-secret',
      'header-secret',
    ])
      assert.ok(!text.includes(secret), secret);
    assert.ok(!text.includes('error-secret'));
  });
});
