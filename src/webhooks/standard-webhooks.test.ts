import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { parseSigningSecrets, signatureV1, verifyWebhook, type WebhookDelivery } from './standard-webhooks.ts';
import { DIRECT_MUTATION_RUNS, KNOWN_ANSWER, mutatedDelivery, mutationCases } from './testing/mutations.ts';

const knownAnswerDelivery = (overrides: Record<string, string> = {}): WebhookDelivery => ({
  headers: {
    'webhook-id': KNOWN_ANSWER.id,
    'webhook-timestamp': String(KNOWN_ANSWER.timestamp),
    'webhook-signature': KNOWN_ANSWER.signature,
    ...overrides,
  },
  body: Buffer.from(KNOWN_ANSWER.body),
});
const keys = parseSigningSecrets(KNOWN_ANSWER.secret);
const at = (seconds: number) => seconds * 1000;

describe('Standard Webhooks verifier', () => {
  it('verifies the known-answer vector with the clock at its timestamp', () => {
    assert.equal(
      `v1,${signatureV1(keys[0], KNOWN_ANSWER.id, KNOWN_ANSWER.timestamp, Buffer.from(KNOWN_ANSWER.body))}`,
      KNOWN_ANSWER.signature,
    );
    assert.deepEqual(verifyWebhook(knownAnswerDelivery(), keys, at(KNOWN_ANSWER.timestamp)), {
      ok: true,
      id: KNOWN_ANSWER.id,
      timestamp: KNOWN_ANSWER.timestamp,
    });
  });

  it('accepts a timestamp exactly 5 minutes away and refuses one more second either way (401)', () => {
    assert.equal(verifyWebhook(knownAnswerDelivery(), keys, at(KNOWN_ANSWER.timestamp + 300)).ok, true);
    assert.equal(verifyWebhook(knownAnswerDelivery(), keys, at(KNOWN_ANSWER.timestamp - 300)).ok, true);
    for (const now of [KNOWN_ANSWER.timestamp + 301, KNOWN_ANSWER.timestamp - 301]) {
      const verdict = verifyWebhook(knownAnswerDelivery(), keys, at(now));
      assert.equal(verdict.ok, false);
      assert.equal(!verdict.ok && verdict.status, 401);
    }
  });

  it('skips other versions and bad entries while one v1 entry matches; refuses when none does', () => {
    const good = KNOWN_ANSWER.signature;
    const wrongV1 = 'v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';
    const sameValueOtherVersion = good.replace('v1,', 'v2,');
    assert.equal(
      verifyWebhook(
        knownAnswerDelivery({ 'webhook-signature': `${sameValueOtherVersion} ${wrongV1} ${good}` }),
        keys,
        at(KNOWN_ANSWER.timestamp),
      ).ok,
      true,
    );
    const verdict = verifyWebhook(
      knownAnswerDelivery({ 'webhook-signature': `${sameValueOtherVersion} ${wrongV1}` }),
      keys,
      at(KNOWN_ANSWER.timestamp),
    );
    assert.deepEqual(verdict.ok ? null : verdict.status, 401);
  });

  it('accepts any of several secrets during a rotation, and no other', () => {
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    const rotated = parseSigningSecrets(`${other}  ${KNOWN_ANSWER.secret}`);
    assert.equal(rotated.length, 2);
    assert.equal(verifyWebhook(knownAnswerDelivery(), rotated, at(KNOWN_ANSWER.timestamp)).ok, true);
    assert.equal(
      verifyWebhook(knownAnswerDelivery(), parseSigningSecrets(other), at(KNOWN_ANSWER.timestamp)).ok,
      false,
    );
  });

  it('answers 400 for a missing or malformed header or an empty body', () => {
    const cases: Array<[string, WebhookDelivery]> = [
      ['no webhook-id', knownAnswerDelivery({ 'webhook-id': '' })],
      [
        'no webhook-timestamp',
        {
          ...knownAnswerDelivery(),
          headers: { 'webhook-id': KNOWN_ANSWER.id, 'webhook-signature': KNOWN_ANSWER.signature },
        },
      ],
      [
        'no webhook-signature',
        {
          ...knownAnswerDelivery(),
          headers: { 'webhook-id': KNOWN_ANSWER.id, 'webhook-timestamp': String(KNOWN_ANSWER.timestamp) },
        },
      ],
      ['timestamp not in seconds', knownAnswerDelivery({ 'webhook-timestamp': '2021-02-26T00:00:00Z' })],
      ['negative timestamp', knownAnswerDelivery({ 'webhook-timestamp': '-1614265330' })],
      [
        'signature entry without a version',
        knownAnswerDelivery({ 'webhook-signature': 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' }),
      ],
      ['id with a space', knownAnswerDelivery({ 'webhook-id': 'msg one' })],
      ['id too long', knownAnswerDelivery({ 'webhook-id': 'm'.repeat(257) })],
      ['empty body', { ...knownAnswerDelivery(), body: Buffer.alloc(0) }],
    ];
    for (const [name, delivery] of cases) {
      const verdict = verifyWebhook(delivery, keys, at(KNOWN_ANSWER.timestamp));
      assert.deepEqual(verdict.ok ? 'accepted' : verdict.status, 400, name);
    }
  });

  it('refuses a malformed secret at start-up rather than every delivery later', () => {
    assert.throws(() => parseSigningSecrets('whsec_'), /REPLICATE_WEBHOOK_SECRET/);
    assert.throws(() => parseSigningSecrets(`${KNOWN_ANSWER.secret} sk_not_a_webhook_secret`), /secret #2/);
    assert.deepEqual(parseSigningSecrets(undefined), []);
  });

  it('accepts what the standardwebhooks library signs, and the library accepts what this verifier computes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 64 }),
        fc.stringMatching(/^msg_[A-Za-z0-9]{1,40}$/),
        fc.json({ maxDepth: 3 }),
        fc.integer({ min: -300, max: 300 }),
        (key, id, body, skew) => {
          const secret = `whsec_${Buffer.from(key).toString('base64')}`;
          const now = Date.now();
          const timestamp = new Date(now + skew * 1000);
          const signature = new Webhook(secret).sign(id, timestamp, body);
          const delivery = {
            headers: {
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
              'webhook-signature': signature,
            },
            body: Buffer.from(body),
          };
          assert.equal(verifyWebhook(delivery, parseSigningSecrets(secret), now).ok, true);
          const ours = `v1,${signatureV1(Buffer.from(key), id, Math.floor(now / 1000), Buffer.from(body))}`;
          new Webhook(secret).verify(
            body,
            { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now / 1000)), 'webhook-signature': ours },
            { jsonParse: false },
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('Standard Webhooks verifier under mutation', () => {
  it(`refuses each of ${DIRECT_MUTATION_RUNS} mutated deliveries (body bytes, id, timestamp, signature, version, secret)`, () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const configured = parseSigningSecrets(secret);
    const now = Date.now();
    let accepted = 0;
    fc.assert(
      fc.property(mutationCases(), (testCase) => {
        // The same delivery unmutated verifies, so a refusal below is the mutation's doing.
        const signedAt = Math.floor(now / 1000) + testCase.skew;
        const intact = {
          headers: {
            'webhook-id': testCase.id,
            'webhook-timestamp': String(signedAt),
            'webhook-signature': new Webhook(secret).sign(testCase.id, new Date(signedAt * 1000), testCase.body),
          },
          body: Buffer.from(testCase.body),
        };
        assert.equal(verifyWebhook(intact, configured, now).ok, true);
        const verdict = verifyWebhook(mutatedDelivery(secret, now, testCase), configured, now);
        if (verdict.ok) accepted++;
        assert.equal(verdict.ok, false, `accepted a mutated delivery: ${JSON.stringify(testCase.mutation)}`);
      }),
      { numRuns: DIRECT_MUTATION_RUNS },
    );
    assert.equal(accepted, 0);
  });
});
