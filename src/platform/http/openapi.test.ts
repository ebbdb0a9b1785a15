import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeEachDatabase } from '../../testing/harness.ts';
import { operationIdOf, transformRoute } from './openapi.ts';
import { fundedUser, keyWithDailyLimit } from '../../gateway/testing.ts';
import { authorizeForTest } from '../../oauth/testing.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Runs `@redocly/cli lint` (the project's redocly.yaml: recommended rules) on `document`, on the project's Node. */
function redoclyLint(document: unknown): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const cli = join(root, 'node_modules/@redocly/cli/bin/cli.js');
    const result = spawnSync(
      process.execPath,
      [cli, 'lint', file, '--config', join(root, 'redocly.yaml'), '--format=stylish', '--max-problems=1000'],
      {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      },
    );
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describeEachDatabase('the OpenAPI document', (env) => {
  it('passes @redocly/cli lint with the recommended rules: no error and no warning', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const { status, output } = redoclyLint(document);
    assert.equal(status, 0, output);
    assert.doesNotMatch(output, /\b(error|warning)\s+[a-z0-9-]+\s/, output);
    assert.match(output, /valid/i, output);
  });

  it("names the repository's licence (package.json, LICENSE) in info.license, which redocly's info-license rule asks for", async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const { license } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    assert.deepEqual(document.info.license, { name: license, url: `https://opensource.org/licenses/${license}` });
  });

  it('gives every operation an operationId, a client-error answer and security, and lists no OPTIONS operation', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    let operations = 0;
    for (const [path, methods] of Object.entries<Record<string, any>>(document.paths)) {
      assert.ok(!('options' in methods), `OPTIONS ${path} is listed`);
      for (const [method, operation] of Object.entries<any>(methods)) {
        operations++;
        assert.match(operation.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${method} ${path}`);
        assert.ok(
          Object.keys(operation.responses).some((code) => code.startsWith('4')),
          `${method} ${path} declares no 4xx`,
        );
        assert.ok(Array.isArray(operation.security), `${method} ${path} has no security`);
      }
    }
    assert.ok(operations > 40);
  });

  it('documents the dashboard session (cookie, and the CSRF header on writes) on the routes that accept it', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    assert.deepEqual(document.components.securitySchemes.session, {
      type: 'apiKey',
      in: 'cookie',
      name: 'tg_session',
      description: document.components.securitySchemes.session.description,
    });
    assert.equal(document.components.securitySchemes.csrf.name, 'x-csrf-token');
    assert.deepEqual(document.paths['/api/wallet/balance'].get.security, [
      { bearer: [] },
      { oauth2: ['billing:read'] },
      { session: [] },
    ]);
    assert.deepEqual(document.paths['/api/user/apps'].post.security, [
      { bearer: [] },
      { oauth2: [] },
      { session: [], csrf: [] },
    ]);
    assert.deepEqual(document.paths['/api/admin/users'].post.security, [{ admin: [] }]);
    assert.deepEqual(document.paths['/healthz'].get.security, []);
  });

  it("describes OAuth apps' tokens as an oauth2 scheme (authorization code, every scope) and names the scopes each route takes, one requirement per scope", async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const { oauth2 } = document.components.securitySchemes;
    assert.equal(oauth2.type, 'oauth2');
    const flow = oauth2.flows.authorizationCode;
    const discovery = (await env.request('GET', '/.well-known/oauth-authorization-server')).body;
    // Relative to the document's server, which is the issuer.
    assert.equal(new URL(flow.authorizationUrl, document.servers[0].url).href, discovery.authorization_endpoint);
    assert.equal(new URL(flow.tokenUrl, document.servers[0].url).href, discovery.token_endpoint);
    assert.deepEqual(Object.keys(flow.scopes).sort(), [...discovery.scopes_supported].sort());
    assert.deepEqual(document.paths['/api/v1/chat/completions'].post.security, [
      { bearer: [] },
      { oauth2: ['ai:chat'] },
      { oauth2: ['ai:completions'] },
      { session: [], csrf: [] },
    ]);
    assert.deepEqual(document.paths['/api/v1/messages'].post.security.slice(0, 4), [
      { bearer: [] },
      { oauth2: ['ai:chat'] },
      { oauth2: ['ai:completions'] },
      { apiKey: [] },
    ]);
  });

  it('documents the media types answered where they are not JSON: event streams, metrics text, audio, the authorization endpoint', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    /** The media types the document gives an operation's answer with `status` (or its range). */
    const documented = (path: string, method: string, status: number) => {
      const responses = document.paths[path][method].responses;
      const answer = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
      assert.ok(answer, `${method} ${path} documents no ${status}`);
      return Object.keys(answer.content ?? {});
    };
    const mediaType = (headers: Headers) => headers.get('content-type')?.split(';')[0] ?? '(none)';

    const user = await fundedUser(env, 1);
    const hello = { model: 'tollgate/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] };
    const streamed = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      body: { ...hello, stream: true },
    });
    assert.equal(streamed.status, 200, streamed.text);
    assert.ok(documented('/api/v1/chat/completions', 'post', 200).includes(mediaType(streamed.headers)));
    const whole = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body: hello });
    assert.ok(documented('/api/v1/chat/completions', 'post', 200).includes(mediaType(whole.headers)));
    for (const path of ['/api/v1/responses', '/api/v1/messages'])
      assert.deepEqual(documented(path, 'post', 200), ['application/json', 'text/event-stream'], path);

    const metrics = await env.admin('GET', '/metrics');
    assert.equal(metrics.status, 200);
    assert.deepEqual(documented('/metrics', 'get', 200), [mediaType(metrics.headers)]);

    assert.ok(documented('/api/v1/audio/speech', 'post', 200).includes('audio/mpeg'));
    assert.ok(!documented('/api/v1/audio/speech', 'post', 200).includes('application/json'));

    const unknownApp = await env.request('GET', '/api/oauth/authorize?client_id=nobody&response_type=code');
    assert.equal(Math.floor(unknownApp.status / 100), 4, unknownApp.text);
    assert.deepEqual(documented('/api/oauth/authorize', 'get', unknownApp.status), [mediaType(unknownApp.headers)]);
    // The redirect carries oidc-provider's short HTML "Redirecting to …" body (openapi-answers.test checks a real one).
    assert.deepEqual(documented('/api/oauth/authorize', 'get', 303), ['text/html']);
  });

  it('documents every status and body it answers: a bad token on chat and on a model, OAuth errors at userinfo, the token, revocation and JWK set answers', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    /** The answer the document gives `method path` for `status` (exact, else its range), with its media types. */
    const answerFor = (path: string, method: string, status: number) => {
      const responses = document.paths[path][method].responses;
      const answer = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
      assert.ok(answer, `${method} ${path} documents no ${status} (only ${Object.keys(responses)})`);
      return answer;
    };
    const jsonSchema = (path: string, method: string, status: number) => {
      const schema = answerFor(path, method, status).content?.['application/json']?.schema;
      assert.ok(schema, `${method} ${path} ${status} documents no JSON body`);
      return schema;
    };
    /** Every field of `body` is documented, and every required one is there. */
    const conforms = (body: Record<string, unknown>, schema: any, what: string) => {
      for (const key of Object.keys(body))
        assert.ok(key in schema.properties || schema.additionalProperties, `${what}: ${key} is not documented`);
      for (const key of schema.required ?? []) assert.ok(key in body, `${what}: ${key} is required but missing`);
      for (const [key, value] of Object.entries(body)) {
        const type = schema.properties[key]?.type;
        if (type)
          assert.equal(type === 'integer' ? 'number' : type, typeof value, `${what}: ${key} is a ${typeof value}`);
      }
    };

    // A route that lists its own errors still answers 401 (and 403, 413, 415) from the layers before it.
    const hello = { model: 'tollgate/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] };
    const chat = await env.request('POST', '/api/v1/chat/completions', { token: 'ak_nonsense', body: hello });
    assert.equal(chat.status, 401);
    conforms(chat.body, jsonSchema('/api/v1/chat/completions', 'post', 401), 'chat 401');
    const model = await env.request('GET', '/api/v1/models/tollgate/echo', { token: 'ak_nonsense' });
    assert.equal(model.status, 401);
    conforms(model.body, jsonSchema('/api/v1/models/{vendor}/{model}', 'get', 401), 'model 401');

    // oidc-provider's endpoints answer in OAuth's shapes.
    const userinfo = await env.request('GET', '/api/oauth/userinfo');
    assert.equal(userinfo.status, 401);
    assert.equal(userinfo.body.error, 'invalid_token');
    conforms(userinfo.body, jsonSchema('/api/oauth/userinfo', 'get', 401), 'userinfo 401');

    const jwks = await env.request('GET', '/api/oauth/jwks');
    assert.equal(jwks.status, 200);
    const jwksType = jwks.headers.get('content-type')!.split(';')[0];
    assert.ok(answerFor('/api/oauth/jwks', 'get', 200).content?.[jwksType], `jwks answers ${jwksType}`);

    const { app, refreshToken } = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: app.clientId, ...fields }),
    });
    const refreshed = await fetch(
      `${env.baseUrl}/api/oauth/token`,
      form({ grant_type: 'refresh_token', refresh_token: refreshToken! }),
    );
    assert.equal(refreshed.status, 200);
    conforms(await refreshed.json(), jsonSchema('/api/oauth/token', 'post', 200), 'token 200');

    const revoked = await fetch(`${env.baseUrl}/api/oauth/revoke`, form({ token: 'not-a-token' }));
    assert.equal(revoked.status, 200);
    assert.equal(await revoked.text(), '');
    assert.equal(answerFor('/api/oauth/revoke', 'post', 200).content, undefined, 'revocation answers no body');
  });

  it("documents the contract's restriction objects on chat's 402 and 429 (§2.2), each field with its type, and real refusals conform", async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const responses = document.paths['/api/v1/chat/completions'].post.responses;
    /** The error object's schemas the document gives for `status` (each branch of an anyOf). */
    const errorObjects = (status: number): any[] => {
      const error = responses[String(status)].content['application/json'].schema.properties.error;
      return error.anyOf ?? [error];
    };
    /** The branch of `status` whose `code` may be `code`, declaring every field of `fields` with its JSON type. */
    const branchFor = (status: number, code: string, fields: Record<string, string>, required: string[]) => {
      const branch = errorObjects(status).find((o) => o.properties?.code?.enum?.includes(code));
      assert.ok(
        branch,
        `chat ${status} documents no error object for ${code}: ${JSON.stringify(errorObjects(status))}`,
      );
      for (const [field, type] of Object.entries(fields))
        assert.equal(branch.properties[field]?.type, type, `chat ${status} ${code}: ${field} is documented as ${type}`);
      for (const field of ['code', 'message', 'type', ...required])
        assert.ok(branch.required.includes(field), `chat ${status} ${code}: ${field} is required`);
      return branch;
    };
    const conforms = (body: any, branch: any, what: string) => {
      assert.deepEqual(Object.keys(body), ['error'], `${what}: the envelope has the single property error`);
      for (const field of branch.required) assert.ok(field in body.error, `${what}: ${field} is missing`);
      for (const [field, value] of Object.entries(body.error)) {
        const declared = branch.properties[field];
        assert.ok(declared, `${what}: ${field} is not documented`);
        assert.equal(declared.type, typeof value, `${what}: ${field} is a ${typeof value}`);
        if (declared.format === 'date-time') assert.ok(!Number.isNaN(Date.parse(value as string)), `${what}: ${field}`);
      }
    };
    const insufficient = branchFor(402, 'INSUFFICIENT_CREDITS', { available: 'number', required: 'number' }, [
      'available',
      'required',
    ]);
    const limit = branchFor(
      429,
      'SPENDING_LIMIT_EXCEEDED',
      { limitType: 'string', limit: 'number', current: 'number', requested: 'number', resetsAt: 'string' },
      ['limitType', 'limit', 'current', 'requested'],
    );
    assert.equal(limit.properties.resetsAt.format, 'date-time');
    branchFor(429, 'RATE_LIMITED', {}, []);

    const hello = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hello' }] };
    const broke = await fundedUser(env, 0, ['ai:chat']);
    const refused = await env.request('POST', '/api/v1/chat/completions', { token: broke.key, body: hello });
    assert.equal(refused.status, 402, refused.text);
    conforms(refused.body, insufficient, 'chat 402');
    const funded = await fundedUser(env, 1, ['ai:chat']);
    const limited = await keyWithDailyLimit(env, funded, 0.000001);
    const overLimit = await env.request('POST', '/api/v1/chat/completions', { token: limited, body: hello });
    assert.equal(overLimit.status, 429, overLimit.text);
    conforms(overLimit.body, limit, 'chat 429');
  });

  it('documents POST /api/admin/users with the 201 it answers', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const responses = document.paths['/api/admin/users'].post.responses;
    assert.ok(responses['201'] && !responses['200'], JSON.stringify(Object.keys(responses)));
    const created = await env.admin('POST', '/api/admin/users', {
      email: 'documented@example.com',
      password: 'a-long-password',
    });
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'email', 'id', 'image', 'name']);
  });
});

it('a route added without schema, security or answers is still documented with security, a 2XX and a 4XX', () => {
  const bare = transformRoute({
    schema: undefined,
    url: '/api/v1/new-thing',
    route: { method: 'POST', config: { auth: ['ai:chat'] } },
  }).schema;
  assert.deepEqual(bare.security, [{ bearer: [] }, { session: [], csrf: [] }]);
  assert.deepEqual(Object.keys(bare.response), ['2XX', '4XX']);
  const publicRoute = transformRoute({
    schema: { response: { 200: {} } },
    url: '/public',
    route: { method: 'GET' },
  }).schema;
  assert.deepEqual(publicRoute.security, []);
  assert.deepEqual(Object.keys(publicRoute.response), ['200', '4XX']);
  const keys = transformRoute({
    schema: {},
    url: '/api/user/api-keys/x',
    route: { method: 'GET', config: { auth: [] } },
  }).schema;
  assert.deepEqual(keys.response['4XX'].required, ['success', 'error']);
});

it('operationIds are the method and the path in camel case, path parameters as By<Name>', () => {
  assert.equal(operationIdOf('get', '/api/v1/chat/completions'), 'getApiV1ChatCompletions');
  assert.equal(operationIdOf('delete', '/api/user/api-keys/{id}'), 'deleteApiUserApiKeysById');
  assert.equal(operationIdOf('get', '/.well-known/openid-configuration'), 'getWellKnownOpenidConfiguration');
});
