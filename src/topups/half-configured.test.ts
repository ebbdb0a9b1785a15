import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config.ts';
import { createLogger } from '../platform/logger.ts';
import { createService } from '../service.ts';
import { selectedDatabases, TestDatabaseSpace } from '../testing/harness.ts';

/** The start's log lines (warn and above) of a service built with these Stripe settings. */
async function startLines(kind: 'sqlite' | 'postgres', stripe: Record<string, string>): Promise<any[]> {
  const space = new TestDatabaseSpace(kind);
  await space.create();
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const config = loadConfig({
    ...space.env(),
    ...stripe,
    LOG_LEVEL: 'warn',
    TOLLGATE_ADMIN_TOKEN: `tga_test_${randomBytes(24).toString('hex')}`,
    PORT: '0',
  });
  const service = await createService({ config, timers: false, log: createLogger('warn', sink) });
  try {
    return lines.map((line) => JSON.parse(line));
  } finally {
    await service.close();
    await space.drop();
  }
}

for (const kind of selectedDatabases()) {
  describe(`Stripe half configured [${kind}]`, () => {
    it('only one of STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET set: the start warns that top-ups are off, naming the one missing', async () => {
      const keyOnly = await startLines(kind, { STRIPE_SECRET_KEY: 'sk_test_halfconfigured' });
      assert.deepEqual(
        keyOnly.filter((line) => /Top-ups are off/.test(line.msg)).map((line) => [line.level, line.msg]),
        [
          [
            40,
            'Top-ups are off: STRIPE_SECRET_KEY is set but STRIPE_WEBHOOK_SECRET is not; top-ups need both (see the README, "Top-ups").',
          ],
        ],
      );
      const secretOnly = await startLines(kind, { STRIPE_WEBHOOK_SECRET: 'whsec_halfconfigured' });
      assert.deepEqual(
        secretOnly.filter((line) => /Top-ups are off/.test(line.msg)).map((line) => [line.level, line.msg]),
        [
          [
            40,
            'Top-ups are off: STRIPE_WEBHOOK_SECRET is set but STRIPE_SECRET_KEY is not; top-ups need both (see the README, "Top-ups").',
          ],
        ],
      );
    });

    it('neither set: top-ups are off without a warning (a deployment that sells no credits)', async () => {
      const lines = await startLines(kind, {});
      assert.deepEqual(
        lines.filter((line) => /Top-ups|STRIPE/.test(line.msg)),
        [],
      );
    });
  });
}
