import { it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { describeEachDatabase, request, type TestEnv } from '../testing/harness.ts';
import { createService } from '../service.ts';
import { runAuthorization, TestBrowser, type TestUser } from './testing.ts';

/**
 * `private_key_jwt` (RFC 7523, OpenID Connect Core §9): a confidential app registered with its public keys
 * authenticates with JWTs signed by its private key, through openid-client's `PrivateKeyJwt` and by hand
 * (to replay, race and tamper with assertions).
 */

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const insecure = { execute: [client.allowInsecureRequests] };

/** An ES256 key pair, its public JWK carrying `kid`. */
async function newKey(kid: string = randomUUID()) {
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  const privateJwk = await crypto.subtle.exportKey('jwk', pair.privateKey);
  return { kid, privateKey: pair.privateKey, publicJwk: { kty, crv, x, y, kid }, privateJwk: { ...privateJwk, kid } };
}
type Key = Awaited<ReturnType<typeof newKey>>;

/** A JWS (ES256) over `claims`, as an app's server would sign its client assertion. */
async function signAssertion(key: Key, claims: Record<string, unknown>): Promise<string> {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'ES256', kid: key.kid, typ: 'JWT' })}.${part(claims)}`;
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, Buffer.from(input));
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}

/** The claims of a fresh assertion for `clientId` addressed to the issuer, living a minute. */
function claimsFor(env: TestEnv, clientId: string, overrides: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: clientId, sub: clientId, aud: env.baseUrl, jti: randomUUID(), iat: now, exp: now + 60, ...overrides };
}

/** POSTs a form to a client-authenticated endpoint of `baseUrl`. */
function postForm(baseUrl: string, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return request(baseUrl, 'POST', path, {
    raw: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
}

/** Introspects a made-up token authenticating with `assertion`: 200 when the app authenticated. */
function introspectWith(baseUrl: string, clientId: string, assertion: string) {
  return postForm(baseUrl, '/api/oauth/introspect', {
    token: 'not-a-token',
    client_id: clientId,
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
  });
}

/** Registers a key-pair app through the operator API. */
async function registerKeyPairApp(env: TestEnv, keys: Key[], scopes = ['openid', 'email', 'read', 'offline_access']) {
  const redirectUri = `http://127.0.0.1:9/callback/${randomUUID()}`;
  const response = await env.admin('POST', '/api/admin/apps', {
    name: 'Backend app',
    redirectUris: [redirectUri],
    scopes,
    type: 'confidential',
    jwks: { keys: keys.map((key) => key.publicJwk) },
  });
  assert.equal(response.status, 201, response.text);
  return { clientId: response.body.clientId as string, body: response.body, redirectUri, scopes };
}

/** openid-client configured for the app with `PrivateKeyJwt` (discovery from the issuer). */
function configFor(env: TestEnv, clientId: string, key: Key) {
  return client.discovery(
    new URL(env.baseUrl),
    clientId,
    undefined,
    client.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
    insecure,
  );
}

/** The code flow with PKCE and nonce, the token exchange authenticated by `config`'s client authentication. */
async function signIn(
  env: TestEnv,
  config: client.Configuration,
  app: { clientId: string; redirectUri: string; scopes: string[] },
  user: TestUser,
) {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: app.redirectUri,
    scope: app.scopes.join(' '),
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const testApp = { ...app, type: 'confidential' as const };
  const outcome = await runAuthorization(
    env,
    new TestBrowser(),
    { app: testApp, scopes: app.scopes, state, codeVerifier, url },
    { user },
  );
  if (outcome.kind !== 'callback')
    throw new Error(`stopped on a page (${outcome.status}): ${outcome.html.slice(0, 300)}`);
  return client.authorizationCodeGrant(config, outcome.url, {
    pkceCodeVerifier: codeVerifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
}

/** The OAuth error openid-client threw for a refused request. */
async function oauthError(promise: Promise<unknown>): Promise<{ error: string; status: number }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof client.ResponseBodyError) return { error: error.error, status: error.status };
    throw error;
  }
  throw new Error('the request was not refused');
}

describeEachDatabase('private_key_jwt client authentication', (env) => {
  it('an app registered with a public JWK Set gets no secret, and openid-client with PrivateKeyJwt signs a user in, refreshes, introspects and revokes', async () => {
    const key = await newKey();
    const app = await registerKeyPairApp(env, [key]);
    assert.equal(app.body.clientSecret, undefined, 'a key-pair app has no secret');
    assert.equal(app.body.tokenEndpointAuthMethod, 'private_key_jwt');

    const config = await configFor(env, app.clientId, key);
    const metadata = config.serverMetadata();
    for (const field of [
      'token_endpoint_auth_methods_supported',
      'revocation_endpoint_auth_methods_supported',
      'introspection_endpoint_auth_methods_supported',
    ] as const)
      assert.ok((metadata[field] as string[]).includes('private_key_jwt'), field);
    assert.ok(metadata.token_endpoint_auth_signing_alg_values_supported?.includes('ES256'));

    const user = await env.createUser();
    const tokens = await signIn(env, config, app, user);
    assert.equal(tokens.claims()?.sub, user.userId);
    assert.equal((await env.request('GET', '/api/user/me', { token: tokens.access_token })).body.id, user.userId);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    const introspected = await client.tokenIntrospection(config, refreshed.access_token);
    assert.equal(introspected.active, true);
    assert.equal(introspected.client_id, app.clientId);
    await client.tokenRevocation(config, refreshed.access_token);
    assert.equal((await env.request('GET', '/api/user/me', { token: refreshed.access_token })).status, 401);

    const stored = await env.db
      .selectFrom('oauth_clients')
      .selectAll()
      .where('client_id', '=', app.clientId)
      .executeTakeFirstOrThrow();
    assert.equal(stored.client_secret_hash, null);
  });

  it('a replayed client assertion is refused with invalid_client, also after a restart (the record is in the database)', async () => {
    const key = await newKey();
    const app = await registerKeyPairApp(env, [key]);
    const assertion = await signAssertion(key, claimsFor(env, app.clientId));
    const first = await introspectWith(env.baseUrl, app.clientId, assertion);
    assert.equal(first.status, 200, first.text);

    const replayed = await introspectWith(env.baseUrl, app.clientId, assertion);
    assert.equal(replayed.status, 401, replayed.text);
    assert.equal(replayed.body.error, 'invalid_client');

    // A restart: another process on the same database and address (what a second instance sees too, since
    // nothing of the replay record lives in the first process).
    const port = Number(new URL(env.baseUrl).port);
    await env.service.close();
    env.service = await createService({ config: env.config(), clock: env.clock, timers: false });
    assert.equal(await env.service.listen(port), env.baseUrl);
    const afterRestart = await introspectWith(env.baseUrl, app.clientId, assertion);
    assert.equal(afterRestart.status, 401, afterRestart.text);
    assert.equal(afterRestart.body.error, 'invalid_client');
    const fresh = await introspectWith(
      env.baseUrl,
      app.clientId,
      await signAssertion(key, claimsFor(env, app.clientId)),
    );
    assert.equal(fresh.status, 200, `a fresh assertion is accepted: ${fresh.text}`);
    const stored = await env.db
      .selectFrom('oidc_payloads')
      .select('model')
      .where('model', '=', 'ReplayDetection')
      .execute();
    assert.ok(stored.length >= 2, 'each assertion is recorded in the database');
  });

  it('the same assertion sent twice at once passes once', async () => {
    const key = await newKey();
    const app = await registerKeyPairApp(env, [key]);
    const assertion = await signAssertion(key, claimsFor(env, app.clientId));
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => introspectWith(env.baseUrl, app.clientId, assertion)),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 401, 401, 401, 401, 401]);
  });

  it('an assertion signed by another key, for another audience, or living too long is refused with invalid_client', async () => {
    const key = await newKey('key-1');
    const app = await registerKeyPairApp(env, [key]);
    // The same kid, another private key: what an attacker who knows the app's public keys can make.
    const impostor = await newKey('key-1');
    const refused = {
      'another key': await signAssertion(impostor, claimsFor(env, app.clientId)),
      'another audience': await signAssertion(key, claimsFor(env, app.clientId, { aud: 'https://other.example.com' })),
      'an hour long': await signAssertion(
        key,
        claimsFor(env, app.clientId, { exp: Math.floor(Date.now() / 1000) + 3600 }),
      ),
      'no jti': await signAssertion(key, claimsFor(env, app.clientId, { jti: undefined })),
      'another app as issuer': await signAssertion(key, claimsFor(env, app.clientId, { iss: 'app_other' })),
    };
    for (const [what, assertion] of Object.entries(refused)) {
      const answer = await introspectWith(env.baseUrl, app.clientId, assertion);
      assert.equal(answer.status, 401, `${what}: ${answer.text}`);
      assert.equal(answer.body.error, 'invalid_client', what);
    }
    // At the token endpoint the same: openid-client with the other key gets invalid_client, the right key
    // gets past client authentication to the grant (a made-up refresh token: invalid_grant).
    const wrong = await configFor(env, app.clientId, impostor);
    assert.deepEqual(await oauthError(client.refreshTokenGrant(wrong, 'made-up')), {
      error: 'invalid_client',
      status: 401,
    });
    const right = await configFor(env, app.clientId, key);
    assert.deepEqual(await oauthError(client.refreshTokenGrant(right, 'made-up')), {
      error: 'invalid_grant',
      status: 400,
    });
  });

  it('a key-pair app cannot authenticate with a secret, nor an app with a secret with an assertion', async () => {
    const key = await newKey();
    const keyApp = await registerKeyPairApp(env, [key]);
    const basic = `Basic ${Buffer.from(`${keyApp.clientId}:tgs_guess`).toString('base64')}`;
    for (const answer of [
      await postForm(
        env.baseUrl,
        '/api/oauth/token',
        { grant_type: 'refresh_token', refresh_token: 'x' },
        { authorization: basic },
      ),
      await postForm(env.baseUrl, '/api/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: keyApp.clientId,
        client_secret: 'tgs_guess',
      }),
      await postForm(env.baseUrl, '/api/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: keyApp.clientId,
      }),
    ]) {
      assert.equal(answer.status, 401, answer.text);
      assert.equal(answer.body.error, 'invalid_client');
    }

    const secretApp = await env.admin('POST', '/api/admin/apps', {
      name: 'Secret app',
      redirectUris: ['https://secret.example.com/cb'],
      scopes: ['read'],
      type: 'confidential',
    });
    assert.equal(secretApp.body.tokenEndpointAuthMethod, 'client_secret_basic');
    // Even an assertion signed with a key the secret app never registered but well-formed in every other way.
    const answer = await introspectWith(
      env.baseUrl,
      secretApp.body.clientId,
      await signAssertion(key, claimsFor(env, secretApp.body.clientId)),
    );
    assert.equal(answer.status, 401, answer.text);
    assert.equal(answer.body.error, 'invalid_client');
  });

  it('a JWK Set with a private member, a symmetric or weak key, a refused algorithm, too many keys, or on a public app is a 400 naming it, and nothing is stored', async () => {
    const key = await newKey();
    const count = async () =>
      Number(
        (
          await env.db
            .selectFrom('oauth_clients')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    const weakRsa = (
      await crypto.subtle.generateKey(
        { name: 'RSASSA-PKCS1-v1_5', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
        true,
        ['sign', 'verify'],
      )
    ).publicKey;
    const cases: [string, unknown, RegExp, ('public' | 'confidential')?][] = [
      ['a private key', { keys: [key.privateJwk] }, /private key material \("d"\)/],
      ['a symmetric key', { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, /private key material \("k"\)/],
      ['kty oct', { keys: [{ kty: 'oct', kid: 'a' }] }, /symmetric key/],
      ['RSA 1024', { keys: [await crypto.subtle.exportKey('jwk', weakRsa)] }, /RSA key of 1024 bits/],
      ['alg none', { keys: [{ ...key.publicJwk, alg: 'none' }] }, /alg "none" is not accepted/],
      ['alg HS256', { keys: [{ ...key.publicJwk, alg: 'HS256' }] }, /alg "HS256" is not accepted/],
      ['P-384', { keys: [{ ...key.publicJwk, crv: 'P-384' }] }, /curve "P-384"/],
      ['use enc', { keys: [{ ...key.publicJwk, use: 'enc' }] }, /use is "enc"/],
      [
        'a point off the curve',
        { keys: [{ ...key.publicJwk, y: key.publicJwk.x }] },
        /not a valid EC P-256 public key/,
      ],
      ['six keys', { keys: Array.from({ length: 6 }, () => key.publicJwk) }, /keys/],
      ['two keys, one kid', { keys: [key.publicJwk, key.publicJwk] }, /its own kid/],
      ['a public app', { keys: [key.publicJwk] }, /Only a confidential app/, 'public'],
    ];
    for (const [what, jwks, message, type = 'confidential'] of cases) {
      const body = { name: 'Bad keys', redirectUris: ['https://bad.example.com/cb'], scopes: ['read'], type, jwks };
      for (const answer of [
        await env.admin('POST', '/api/admin/apps', body),
        await env.dashboard(await env.createUser(), 'POST', '/api/user/apps', body),
      ]) {
        assert.equal(answer.status, 400, `${what}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'INVALID_REQUEST', what);
        assert.match(answer.body.error.message, message, what);
      }
    }
    assert.equal(await count(), before, 'no app was registered');
  });

  it("the owner and the operator replace an app's keys: the old key stops, the new one works at once; another's app is a 404, a secret app a 400", async () => {
    const owner = await env.createUser();
    const [oldKey, newKeyPair, third] = [await newKey(), await newKey(), await newKey()];
    const created = await env.dashboard(owner, 'POST', '/api/user/apps', {
      name: 'Mine',
      redirectUris: ['https://mine.example.com/cb'],
      scopes: ['read'],
      type: 'confidential',
      jwks: { keys: [oldKey.publicJwk] },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.clientSecret, undefined);
    const clientId = created.body.clientId as string;
    const listed = (await env.dashboard(owner, 'GET', '/api/user/apps')).body.apps[0];
    assert.equal(listed.tokenEndpointAuthMethod, 'private_key_jwt');
    assert.deepEqual(listed.jwks, { keys: [oldKey.publicJwk] });
    const works = async (key: Key) =>
      (await introspectWith(env.baseUrl, clientId, await signAssertion(key, claimsFor(env, clientId)))).status;

    // Old and new side by side, then the new one alone.
    const both = await env.dashboard(owner, 'PUT', `/api/user/apps/${clientId}/jwks`, {
      jwks: { keys: [oldKey.publicJwk, newKeyPair.publicJwk] },
    });
    assert.equal(both.status, 200, both.text);
    assert.deepEqual([await works(oldKey), await works(newKeyPair)], [200, 200]);
    assert.equal(
      (await env.dashboard(owner, 'PUT', `/api/user/apps/${clientId}/jwks`, { jwks: { keys: [newKeyPair.publicJwk] } }))
        .status,
      200,
    );
    assert.deepEqual([await works(oldKey), await works(newKeyPair)], [401, 200]);

    const operator = await env.admin('PUT', `/api/admin/apps/${clientId}/jwks`, { jwks: { keys: [third.publicJwk] } });
    assert.equal(operator.status, 200, operator.text);
    assert.deepEqual([await works(newKeyPair), await works(third)], [401, 200]);

    const stranger = await env.createUser();
    const notTheirs = await env.dashboard(stranger, 'PUT', `/api/user/apps/${clientId}/jwks`, {
      jwks: { keys: [oldKey.publicJwk] },
    });
    assert.equal(notTheirs.status, 404, notTheirs.text);
    const privateOne = await env.admin('PUT', `/api/admin/apps/${clientId}/jwks`, {
      jwks: { keys: [third.privateJwk] },
    });
    assert.equal(privateOne.status, 400);
    assert.deepEqual([await works(third)], [200], 'a refused rotation leaves the keys as they were');

    const secretApp = await env.admin('POST', '/api/admin/apps', {
      name: 'Secret app',
      redirectUris: ['https://secret.example.com/cb'],
      scopes: ['read'],
      type: 'confidential',
    });
    const noKeys = await env.admin('PUT', `/api/admin/apps/${secretApp.body.clientId}/jwks`, {
      jwks: { keys: [third.publicJwk] },
    });
    assert.equal(noKeys.status, 400);
    assert.match(noKeys.body.error.message, /does not authenticate with private_key_jwt/);
  });
});
