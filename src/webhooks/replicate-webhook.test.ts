import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { FakeReplicate } from '../predictions/testing/replicate-server.ts';
import { HTTP_MUTATION_RUNS, KNOWN_ANSWER, mutatedDelivery, mutationCases } from './testing/mutations.ts';

const fake = await new FakeReplicate().start();
after(() => fake.stop());

/** Rows of webhook_deliveries: a refused delivery must never add one. */
async function deliveriesRecorded(env: TestEnv): Promise<number> {
  const row = await env.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function post(env: TestEnv, body: string | Buffer, headers: Record<string, string>) {
  return FakeReplicate.deliver(`${env.baseUrl}/api/webhooks/replicate`, { body: body as string, headers });
}

const notice = (id: string, status = 'processing') => JSON.stringify({ id, status, output: null, metrics: {} });

describeEachDatabase(
  'Replicate webhook verification over HTTP',
  (env) => {
    before(() => {
      fake.now = () => env.clock.now();
    });

    it('the known-answer vector passes verification with the clock at its timestamp (then 400: it is not a prediction)', async () => {
      const clock = env.manualClock;
      const saved = clock.now();
      const headers = {
        'content-type': 'application/json',
        'webhook-id': KNOWN_ANSWER.id,
        'webhook-timestamp': String(KNOWN_ANSWER.timestamp),
        'webhook-signature': KNOWN_ANSWER.signature,
      };
      try {
        clock.set(KNOWN_ANSWER.timestamp * 1000);
        const verified = await post(env, KNOWN_ANSWER.body, headers);
        assert.equal(verified.status, 400);
        assert.equal(verified.body.error.code, 'WEBHOOK_INVALID');
        assert.match(verified.body.error.message, /body must be a prediction/);
        clock.set((KNOWN_ANSWER.timestamp + 301) * 1000);
        const stale = await post(env, KNOWN_ANSWER.body, headers);
        assert.equal(stale.status, 401);
        assert.equal(stale.body.error.code, 'WEBHOOK_UNVERIFIED');
      } finally {
        clock.set(saved);
      }
      assert.equal(await deliveriesRecorded(env), 0);
    });

    it('a delivery signed by the standardwebhooks library is accepted once; its repeat is a duplicate', async () => {
      const before = await deliveriesRecorded(env);
      const delivery = fake.sign(notice('unknownprediction1'));
      const first = await FakeReplicate.deliver(`${env.baseUrl}/api/webhooks/replicate`, delivery);
      assert.equal(first.status, 200);
      assert.deepEqual(first.body, {
        received: true,
        predictionId: 'unknownprediction1',
        status: 'processing',
        charged: false,
      });
      const again = await FakeReplicate.deliver(`${env.baseUrl}/api/webhooks/replicate`, delivery);
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, { received: true, duplicate: true, predictionId: 'unknownprediction1' });
      assert.equal(await deliveriesRecorded(env), before + 1);
    });

    it('the raw bytes are verified whatever the content type says', async () => {
      const delivery = fake.sign(notice('unknownprediction2'));
      for (const headers of [
        { ...delivery.headers, 'content-type': 'text/plain' },
        Object.fromEntries(Object.entries(delivery.headers).filter(([name]) => name !== 'content-type')),
      ]) {
        const response = await post(env, delivery.body, {
          ...headers,
          'webhook-id': `msg_${randomBytes(8).toString('hex')}`,
        });
        assert.equal(response.status, 401, 'a changed webhook-id no longer matches the signature');
      }
      const plain = await post(env, delivery.body, { ...delivery.headers, 'content-type': 'text/plain' });
      assert.equal(plain.status, 200);
    });

    it('missing or malformed headers or body answer 400 WEBHOOK_INVALID and record nothing', async () => {
      const before = await deliveriesRecorded(env);
      const valid = fake.sign(notice('unknownprediction3'));
      const without = (name: string) =>
        Object.fromEntries(Object.entries(valid.headers).filter(([key]) => key !== name));
      const notJson = fake.sign('{"id": "abc", "status": ');
      const noStatus = fake.sign(JSON.stringify({ id: 'abc' }));
      const anArray = fake.sign(JSON.stringify([{ id: 'abc', status: 'succeeded' }]));
      // No Replicate id or status holds a control character; PostgreSQL refuses a NUL in any text (was a 500).
      const nulInId = fake.sign(JSON.stringify({ id: 'abc\u0000def', status: 'succeeded', metrics: {} }));
      const nulInStatus = fake.sign(JSON.stringify({ id: 'abcdef', status: 'succeeded\u0000', metrics: {} }));
      const newlineInId = fake.sign(JSON.stringify({ id: 'abc\ndef', status: 'succeeded', metrics: {} }));
      const cases: Array<[string, string, Record<string, string>]> = [
        ['no webhook-id', valid.body, without('webhook-id')],
        ['no webhook-timestamp', valid.body, without('webhook-timestamp')],
        ['no webhook-signature', valid.body, without('webhook-signature')],
        ['no signature headers at all', valid.body, { 'content-type': 'application/json' }],
        ['timestamp in milliseconds text', valid.body, { ...valid.headers, 'webhook-timestamp': 'yesterday' }],
        [
          'signature without version',
          valid.body,
          { ...valid.headers, 'webhook-signature': valid.headers['webhook-signature'].slice(3) },
        ],
        ['empty body', '', valid.headers],
        ['signed body that is not JSON', notJson.body, notJson.headers],
        ['signed body without a status', noStatus.body, noStatus.headers],
        ['signed body that is an array', anArray.body, anArray.headers],
        ['signed body whose id holds a NUL', nulInId.body, nulInId.headers],
        ['signed body whose status holds a NUL', nulInStatus.body, nulInStatus.headers],
        ['signed body whose id holds a line break', newlineInId.body, newlineInId.headers],
      ];
      for (const [name, body, headers] of cases) {
        const response = await post(env, body, headers);
        assert.equal(response.status, 400, `${name}: ${JSON.stringify(response.body)}`);
        assert.equal(response.body.error.code, 'WEBHOOK_INVALID', name);
      }
      assert.equal(await deliveriesRecorded(env), before);
    });

    it('a bad signature, a wrong secret or a timestamp over 5 minutes away answers 401 WEBHOOK_UNVERIFIED and records nothing', async () => {
      const before = await deliveriesRecorded(env);
      const body = notice('unknownprediction4', 'succeeded');
      const now = env.clock.now();
      const tampered = fake.sign(body);
      const cases: Array<[string, string, Record<string, string>]> = [
        ['tampered body', body.replace('succeeded', 'succeedee'), tampered.headers],
        ['wrong secret', body, fake.sign(body, { secret: `whsec_${randomBytes(24).toString('base64')}` }).headers],
        ['stale timestamp', body, fake.sign(body, { timestamp: now - 301_000 }).headers],
        ['future timestamp', body, fake.sign(body, { timestamp: now + 301_000 }).headers],
        ['signature of another id', body, { ...tampered.headers, 'webhook-id': 'msg_other' }],
        [
          'only other versions',
          body,
          { ...tampered.headers, 'webhook-signature': tampered.headers['webhook-signature'].replace('v1,', 'v2,') },
        ],
      ];
      for (const [name, sent, headers] of cases) {
        const response = await post(env, sent, headers);
        assert.equal(response.status, 401, name);
        assert.equal(response.body.error.code, 'WEBHOOK_UNVERIFIED', name);
      }
      assert.equal(await deliveriesRecorded(env), before);
    });

    it('during a rotation a delivery signed with either configured secret is accepted', async () => {
      const withNew = await FakeReplicate.deliver(
        `${env.baseUrl}/api/webhooks/replicate`,
        fake.sign(notice('rotated1')),
      );
      const withOld = await FakeReplicate.deliver(
        `${env.baseUrl}/api/webhooks/replicate`,
        fake.sign(notice('rotated2'), { secret: KNOWN_ANSWER.secret }),
      );
      assert.deepEqual([withNew.status, withOld.status], [200, 200]);
      const signedWithBoth = fake.sign(notice('rotated3'));
      const old = fake.sign(notice('rotated3'), {
        id: signedWithBoth.headers['webhook-id'],
        timestamp: Number(signedWithBoth.headers['webhook-timestamp']) * 1000,
        secret: KNOWN_ANSWER.secret,
      });
      const both = await post(env, signedWithBoth.body, {
        ...signedWithBoth.headers,
        'webhook-signature': `${old.headers['webhook-signature']} ${signedWithBoth.headers['webhook-signature']}`,
      });
      assert.equal(both.status, 200);
    });

    it(`${HTTP_MUTATION_RUNS} mutated deliveries through HTTP: none accepted, nothing recorded`, async () => {
      const before = await deliveriesRecorded(env);
      let accepted = 0;
      await fc.assert(
        fc.asyncProperty(mutationCases(), async (testCase) => {
          const delivery = mutatedDelivery(fake.secret, env.clock.now(), testCase);
          const response = await post(env, delivery.body, delivery.headers);
          if (response.status === 200) accepted++;
          assert.ok(
            [400, 401].includes(response.status),
            `answered ${response.status} to ${JSON.stringify(testCase.mutation)}`,
          );
        }),
        { numRuns: HTTP_MUTATION_RUNS },
      );
      assert.equal(accepted, 0);
      assert.equal(await deliveriesRecorded(env), before);
    });
  },
  {
    manualClock: true,
    config: {
      REPLICATE_WEBHOOK_SECRET: `${fake.secret} ${KNOWN_ANSWER.secret}`,
      REPLICATE_BASE_URL: fake.baseUrl,
      REPLICATE_API_TOKEN: fake.token,
    },
  },
);
