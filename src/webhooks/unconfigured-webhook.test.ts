import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config.ts';
import { createLogger } from '../platform/logger.ts';
import { createService, type Service } from '../service.ts';
import { selectedDatabases, TestDatabaseSpace } from '../testing/harness.ts';
import { FakeReplicate } from '../predictions/testing/replicate-server.ts';
import { allTables } from '../testing/all-tables.ts';

for (const kind of selectedDatabases()) {
  describe(`Replicate webhook without REPLICATE_WEBHOOK_SECRET [${kind}]`, () => {
    const space = new TestDatabaseSpace(kind);
    const logLines: string[] = [];
    let service: Service;
    let baseUrl: string;

    before(async () => {
      await space.create();
      // Replicate configured (its predictions' notices would be refused): the start warns.
      const config = loadConfig({
        ...space.env(),
        LOG_LEVEL: 'warn',
        REPLICATE_API_TOKEN: 'r8_test_token',
        TOLLGATE_ADMIN_TOKEN: `tga_test_${randomBytes(24).toString('hex')}`,
        PORT: '0',
      });
      const sink = new Writable({
        write(chunk, _encoding, done) {
          logLines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      });
      service = await createService({ config, timers: false, log: createLogger('warn', sink) });
      baseUrl = await service.listen(0);
    });
    after(async () => {
      await service?.close();
      await space.drop();
    });

    it('a listening server with Replicate configured warns once at start that deliveries are refused', () => {
      const warned = logLines
        .map((line) => JSON.parse(line))
        .filter((line) => /REPLICATE_WEBHOOK_SECRET is not set/.test(line.msg));
      assert.equal(warned.length, 1);
    });

    it('refuses every delivery, even a correctly signed one, with 503, records nothing and logs why', async () => {
      const signer = new FakeReplicate();
      const deliveries = [
        signer.sign(JSON.stringify({ id: 'abc', status: 'succeeded', metrics: { predict_time: 1 } })),
        { body: '{}', headers: { 'content-type': 'application/json' } },
      ];
      for (const delivery of deliveries) {
        const response = await FakeReplicate.deliver(`${baseUrl}/api/webhooks/replicate`, delivery);
        assert.equal(response.status, 503);
        assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE');
        assert.match(response.body.error.message, /REPLICATE_WEBHOOK_SECRET/);
      }
      const rows = await allTables(service.ctx.db)
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(rows.n), 0);
      const explained = logLines
        .map((line) => JSON.parse(line))
        .filter((line) => /REPLICATE_WEBHOOK_SECRET is not set/.test(line.msg));
      assert.ok(explained.length >= 1 + deliveries.length, 'one line at start and one per refused delivery');
    });
  });
}
