/**
 * Test material for the webhook verifier: the Standard Webhooks known-answer vector, and fast-check
 * generators of valid deliveries each broken by one mutation (body bytes, id, timestamp, signature,
 * version, secret). Shared by the direct property test and the one through HTTP.
 */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';

/** The Standard Webhooks known-answer vector (../shared/reference.md "Security references"). */
export const KNOWN_ANSWER = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

/** A valid delivery and one way of breaking it; shared with the HTTP property test. */
export interface MutationCase {
  body: string;
  id: string;
  /** Seconds from now of the signed timestamp (inside the window). */
  skew: number;
  mutation:
    | { kind: 'body-flip'; index: number; mask: number }
    | { kind: 'body-insert'; index: number; byte: number }
    | { kind: 'body-delete'; index: number }
    | { kind: 'id'; index: number; char: string }
    | { kind: 'timestamp'; delta: number }
    | { kind: 'signature'; index: number; char: string }
    | { kind: 'version'; version: string }
    | { kind: 'secret'; key: Uint8Array };
}

const BASE64_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Arbitrary valid deliveries, each with one mutation that must make it fail. */
export const mutationCases = (): fc.Arbitrary<MutationCase> =>
  fc.record({
    body: fc
      .oneof(
        fc.json({ maxDepth: 3 }),
        fc.string({ minLength: 1, maxLength: 300 }),
        fc.constant('{"id":"abc","status":"succeeded","metrics":{"predict_time":1.5}}'),
      )
      .filter((b) => b.length > 0),
    id: fc.stringMatching(/^msg_[A-Za-z0-9]{1,40}$/),
    skew: fc.integer({ min: -240, max: 240 }),
    mutation: fc.oneof(
      fc.record({ kind: fc.constant('body-flip' as const), index: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('body-insert' as const), index: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('body-delete' as const), index: fc.nat() }),
      fc.record({ kind: fc.constant('id' as const), index: fc.nat(), char: fc.constantFrom(...'abcXYZ019_-.~') }),
      fc.record({
        kind: fc.constant('timestamp' as const),
        delta: fc.integer({ min: -100_000, max: 100_000 }).filter((d) => d !== 0),
      }),
      fc.record({ kind: fc.constant('signature' as const), index: fc.nat(), char: fc.constantFrom(...BASE64_CHARS) }),
      fc.record({ kind: fc.constant('version' as const), version: fc.constantFrom('v0', 'v2', 'v1a', 'V1', 'v1b') }),
      fc.record({ kind: fc.constant('secret' as const), key: fc.uint8Array({ minLength: 16, maxLength: 48 }) }),
    ),
  });

/**
 * Signs the case's delivery with the `standardwebhooks` library under `secret` at `nowMs + skew`, then
 * applies its mutation to the bytes, headers or secret. Every mutation changes what was signed.
 */
export function mutatedDelivery(
  secret: string,
  nowMs: number,
  testCase: MutationCase,
): { body: Buffer; headers: Record<string, string> } {
  const timestamp = Math.floor(nowMs / 1000) + testCase.skew;
  const m = testCase.mutation;
  const signingSecret = m.kind === 'secret' ? `whsec_${Buffer.from(m.key).toString('base64')}` : secret;
  let signature = new Webhook(signingSecret).sign(testCase.id, new Date(timestamp * 1000), testCase.body);
  let body = Buffer.from(testCase.body);
  let id = testCase.id;
  let stamp = timestamp;
  switch (m.kind) {
    case 'body-flip': {
      const i = m.index % body.length;
      body = Buffer.from(body);
      body[i] ^= m.mask;
      break;
    }
    case 'body-insert': {
      const i = m.index % (body.length + 1);
      body = Buffer.concat([body.subarray(0, i), Buffer.from([m.byte]), body.subarray(i)]);
      break;
    }
    case 'body-delete': {
      const i = m.index % body.length;
      body = Buffer.concat([body.subarray(0, i), body.subarray(i + 1)]);
      break;
    }
    case 'id': {
      const i = m.index % id.length;
      id = id[i] === m.char ? id + m.char : id.slice(0, i) + m.char + id.slice(i + 1);
      break;
    }
    case 'timestamp':
      stamp = timestamp + m.delta;
      break;
    case 'signature': {
      const value = signature.slice(3);
      const i = m.index % value.length;
      const char = value[i] === m.char ? (m.char === 'A' ? 'B' : 'A') : m.char;
      signature = `v1,${value.slice(0, i)}${char}${value.slice(i + 1)}`;
      break;
    }
    case 'version':
      signature = signature.replace(/^v1,/, `${m.version},`);
      break;
    case 'secret':
      break;
  }
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(stamp),
      'webhook-signature': signature,
    },
  };
}

/** How many mutated deliveries go straight to the verifier; the HTTP suite sends the rest of the 10,000. */
export const DIRECT_MUTATION_RUNS = 9_700;
export const HTTP_MUTATION_RUNS = 300;
