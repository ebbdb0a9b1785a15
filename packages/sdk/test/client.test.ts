import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  createTollgateClient,
  memoryStorage,
  s256Challenge,
  TollgateOAuthError,
  TollgateRequestError,
  TollgateRestrictionError,
  type TollgateClient,
} from '../src/index.ts';

test('the S256 challenge matches RFC 7636 appendix B', async () => {
  assert.equal(
    await s256Challenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'),
    'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  );
});

test('outside a browser, a client made without a storage keeps its tokens in memory and Node prints no warning', () => {
  // A process of its own: Node (25 and later) warns once per process when its `localStorage` is read without
  // --localstorage-file, which is what a probe for Web Storage did.
  const script = `
    import { createTollgateClient } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)};
    const client = createTollgateClient({ baseUrl: 'http://127.0.0.1:9', clientId: 'app_x', redirectUri: 'http://127.0.0.1:9/', scopes: ['ai:chat'] });
    const { state } = await client.createAuthorizationRequest();
    console.log(JSON.stringify({ state: state.length > 0, signedIn: client.isSignedIn() }));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(result.stderr, '');
  assert.deepEqual(JSON.parse(result.stdout), { state: true, signedIn: false });
});

/**
 * A small authorization server and gateway on node:http, standing in for Tollgate's OAuth server: it keeps
 * the challenge of each code and checks the verifier at the token endpoint, rotates refresh tokens, and
 * serves the routes the SDK calls.
 */
class FakeGateway {
  server: Server = createServer((req, res) => void this.handle(req, res));
  baseUrl = '';
  codes = new Map<string, { challenge: string; redirectUri: string; clientId: string }>();
  refreshTokens = new Set<string>();
  accessTokens = new Set<string>();
  tokenRequests: URLSearchParams[] = [];
  expiresIn = 3600;
  counter = 0;
  /** Whether its metadata says it sends `iss` with its authorization responses (RFC 9207), as Tollgate's does. */
  sendsIss = true;

  async start() {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const address = this.server.address() as { port: number };
    this.baseUrl = `http://127.0.0.1:${address.port}`;
  }

  /** What the consent page does once the user allows: a code bound to the request's challenge. */
  authorize(authorizeUrl: string): string {
    const url = new URL(authorizeUrl);
    const code = `code_${++this.counter}`;
    this.codes.set(code, {
      challenge: url.searchParams.get('code_challenge')!,
      redirectUri: url.searchParams.get('redirect_uri')!,
      clientId: url.searchParams.get('client_id')!,
    });
    const back = new URL(url.searchParams.get('redirect_uri')!);
    back.searchParams.set('code', code);
    back.searchParams.set('state', url.searchParams.get('state')!);
    if (this.sendsIss) back.searchParams.set('iss', this.baseUrl);
    return back.toString();
  }

  issue(res: any, withRefresh: boolean) {
    const access = `at_${++this.counter}`;
    this.accessTokens.add(access);
    const body: Record<string, unknown> = {
      access_token: access,
      token_type: 'Bearer',
      expires_in: this.expiresIn,
      scope: 'read ai:chat offline_access',
    };
    if (withRefresh) {
      const refresh = `rt_${++this.counter}`;
      this.refreshTokens.add(refresh);
      body.refresh_token = refresh;
    }
    this.json(res, 200, body);
  }

  json(res: any, status: number, body: unknown) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  async handle(req: IncomingMessage, res: any) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const url = new URL(req.url!, this.baseUrl);
    if (url.pathname === '/.well-known/oauth-authorization-server')
      return this.json(res, 200, {
        issuer: this.baseUrl,
        authorization_endpoint: `${this.baseUrl}/api/oauth/authorize`,
        token_endpoint: `${this.baseUrl}/api/oauth/token`,
        authorization_response_iss_parameter_supported: this.sendsIss,
      });
    if (url.pathname === '/api/oauth/token') {
      const form = new URLSearchParams(raw);
      this.tokenRequests.push(form);
      if (form.get('grant_type') === 'authorization_code') {
        const grant = this.codes.get(form.get('code')!);
        this.codes.delete(form.get('code')!);
        const challenge = createHash('sha256')
          .update(form.get('code_verifier') ?? '')
          .digest('base64url');
        if (
          !grant ||
          grant.challenge !== challenge ||
          grant.redirectUri !== form.get('redirect_uri') ||
          grant.clientId !== form.get('client_id')
        ) {
          return this.json(res, 400, {
            error: 'invalid_grant',
            error_description: 'code, verifier or redirect_uri do not match',
          });
        }
        return this.issue(res, true);
      }
      if (form.get('grant_type') === 'refresh_token') {
        const token = form.get('refresh_token')!;
        if (!this.refreshTokens.delete(token))
          return this.json(res, 400, { error: 'invalid_grant', error_description: 'refresh token reused or unknown' });
        return this.issue(res, true);
      }
      return this.json(res, 400, { error: 'unsupported_grant_type' });
    }
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.accessTokens.has(token))
      return this.json(res, 401, {
        error: { code: 'UNAUTHENTICATED', message: 'bad token', type: 'authentication_error' },
      });
    if (url.pathname === '/api/user/me')
      return this.json(res, 200, {
        id: 'usr_1',
        email: 'a@example.com',
        name: 'A',
        image: null,
        createdAt: '2030-01-01T00:00:00Z',
      });
    if (url.pathname === '/api/v1/chat/completions') {
      const body = JSON.parse(raw);
      const content = body.messages.at(-1).content as string | Array<{ text: string }>;
      const text = typeof content === 'string' ? content : content.map((part) => part.text).join('');
      if (text === 'limit')
        return this.json(res, 429, {
          error: {
            code: 'SPENDING_LIMIT_EXCEEDED',
            message: 'Daily spending limit exceeded',
            type: 'spending_limit_error',
            limitType: 'daily',
            limit: 1,
            current: 1,
            requested: 0.5,
            resetsAt: '2030-01-02T00:00:00Z',
          },
        });
      if (text === 'crash') return this.json(res, 500, { message: 'upstream exploded' });
      if (text === 'use a tool')
        return this.json(res, 200, {
          id: 'c2',
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
              },
              finish_reason: 'tool_calls',
            },
          ],
        });
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const piece of text.split(' '))
          res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece + ' ' } }] })}\n\n`);
        if (text.includes('cut')) {
          res.write(
            `event: error\ndata: ${JSON.stringify({ error: { code: 'UPSTREAM_ERROR', message: 'upstream cut', type: 'upstream_error' } })}\n\n`,
          );
          return res.end();
        }
        res.write('data: [DONE]\n\n');
        return res.end();
      }
      return this.json(res, 200, {
        id: 'c1',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      });
    }
    this.json(res, 404, { message: 'no route' });
  }
}

describe('OAuth sign-in with PKCE and token upkeep', () => {
  const gateway = new FakeGateway();
  let now = Date.parse('2030-01-01T00:00:00Z');
  let navigatedTo = '';
  before(() => gateway.start());
  after(() => gateway.server.close());

  function client(shared = { storage: memoryStorage(), transientStorage: memoryStorage() }): TollgateClient {
    return createTollgateClient({
      baseUrl: gateway.baseUrl,
      clientId: 'app_test',
      redirectUri: 'http://127.0.0.1:9/callback',
      scopes: ['read', 'ai:chat', 'offline_access'],
      ...shared,
      now: () => now,
      navigate: (url) => (navigatedTo = url),
    });
  }

  test('signIn only navigates to the authorize URL with an S256 challenge of the kept verifier; no request is made', async () => {
    const transientStorage = memoryStorage();
    const before = gateway.tokenRequests.length;
    await client({ storage: memoryStorage(), transientStorage }).signIn();
    const url = new URL(navigatedTo);
    assert.equal(url.origin + url.pathname, `${gateway.baseUrl}/api/oauth/authorize`);
    assert.equal(url.searchParams.get('response_type'), 'code');
    assert.equal(url.searchParams.get('client_id'), 'app_test');
    assert.equal(url.searchParams.get('redirect_uri'), 'http://127.0.0.1:9/callback');
    assert.equal(url.searchParams.get('scope'), 'read ai:chat offline_access');
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    const pending = JSON.parse(transientStorage.getItem('tollgate:pkce:app_test')!);
    assert.equal(pending.state, url.searchParams.get('state'));
    assert.match(pending.codeVerifier, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(url.searchParams.get('code_challenge'), await s256Challenge(pending.codeVerifier));
    assert.equal(gateway.tokenRequests.length, before);
  });

  test('handleRedirect exchanges the code with the verifier at the token endpoint and keeps the tokens', async () => {
    const shared = { storage: memoryStorage(), transientStorage: memoryStorage() };
    const app = client(shared);
    await app.signIn();
    const tokens = await app.handleRedirect(gateway.authorize(navigatedTo));
    assert.ok(tokens?.accessToken.startsWith('at_'));
    assert.ok(tokens?.refreshToken?.startsWith('rt_'));
    assert.equal(tokens?.expiresAt, now + 3600_000);
    assert.equal(shared.transientStorage.getItem('tollgate:pkce:app_test'), null, 'the verifier is single use');
    assert.equal((await app.getUser()).email, 'a@example.com');
    // A second page load with the same URL cannot replay the exchange.
    await assert.rejects(
      app.handleRedirect(gateway.authorize(navigatedTo)),
      (e: unknown) => e instanceof TollgateOAuthError && e.error === 'state_mismatch',
    );
  });

  test('a redirect whose state differs from the one this browser kept is refused before any token request', async () => {
    const app = client();
    await app.signIn();
    const back = new URL(gateway.authorize(navigatedTo));
    back.searchParams.set('state', 'forged');
    const before = gateway.tokenRequests.length;
    await assert.rejects(
      app.handleRedirect(back.toString()),
      (e: unknown) => e instanceof TollgateOAuthError && e.error === 'state_mismatch',
    );
    assert.equal(gateway.tokenRequests.length, before);
    assert.equal(app.isSignedIn(), false);
  });

  test('a denied consent surfaces the OAuth error; a plain page load is not a redirect', async () => {
    const app = client();
    await app.signIn();
    const state = new URL(navigatedTo).searchParams.get('state')!;
    await assert.rejects(
      app.handleRedirect(`http://127.0.0.1:9/callback?error=access_denied&state=${state}&iss=${gateway.baseUrl}`),
      (e: unknown) => e instanceof TollgateOAuthError && e.error === 'access_denied',
    );
    assert.equal(await app.handleRedirect('http://127.0.0.1:9/callback'), null);
  });

  test('a response without iss is refused as issuer_mismatch before any token request, unless the server sends none', async () => {
    const app = client();
    await app.signIn();
    const back = new URL(gateway.authorize(navigatedTo));
    back.searchParams.delete('iss');
    const before = gateway.tokenRequests.length;
    await assert.rejects(
      app.handleRedirect(back.toString()),
      (e: unknown) => e instanceof TollgateOAuthError && e.error === 'issuer_mismatch',
    );
    assert.equal(gateway.tokenRequests.length, before);
    // A server whose metadata does not say it sends iss: nothing to compare, the code is redeemed as before.
    gateway.sendsIss = false;
    try {
      await app.signIn();
      assert.ok((await app.handleRedirect(gateway.authorize(navigatedTo)))?.accessToken);
    } finally {
      gateway.sendsIss = true;
    }
  });

  test('a verifier that does not match the challenge is refused by the server (the exchange proves possession)', async () => {
    const shared = { storage: memoryStorage(), transientStorage: memoryStorage() };
    const app = client(shared);
    await app.signIn();
    const pending = JSON.parse(shared.transientStorage.getItem('tollgate:pkce:app_test')!);
    shared.transientStorage.setItem(
      'tollgate:pkce:app_test',
      JSON.stringify({ ...pending, codeVerifier: 'x'.repeat(43) }),
    );
    await assert.rejects(
      app.handleRedirect(gateway.authorize(navigatedTo)),
      (e: unknown) => e instanceof TollgateOAuthError && e.error === 'invalid_grant',
    );
  });

  test('the access token is refreshed before it expires, the rotated refresh token replaces the old one', async () => {
    const shared = { storage: memoryStorage(), transientStorage: memoryStorage() };
    const app = client(shared);
    await app.signIn();
    const first = (await app.handleRedirect(gateway.authorize(navigatedTo)))!;
    now += 3600_000 - 120_000;
    assert.equal(await app.getAccessToken(), first.accessToken, 'still two minutes left: no refresh');
    now += 90_000;
    const [a, b] = await Promise.all([app.getAccessToken(), app.getAccessToken()]);
    assert.equal(a, b, 'concurrent callers share one refresh');
    assert.notEqual(a, first.accessToken);
    const refreshes = gateway.tokenRequests.filter((f) => f.get('refresh_token') === first.refreshToken);
    assert.equal(refreshes.length, 1);
    assert.notEqual(app.getTokens()!.refreshToken, first.refreshToken);
    assert.equal(
      (await app.chat({ model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] })).choices[0].message
        .content,
      'hi',
    );
  });

  test('a refused refresh (rotated token reused, grant revoked) signs the client out', async () => {
    const shared = { storage: memoryStorage(), transientStorage: memoryStorage() };
    const app = client(shared);
    await app.signIn();
    const tokens = (await app.handleRedirect(gateway.authorize(navigatedTo)))!;
    gateway.refreshTokens.delete(tokens.refreshToken!);
    now += 3600_000;
    assert.equal(await app.getAccessToken(), null);
    assert.equal(app.isSignedIn(), false);
  });

  test('a revoked access token is refreshed once and the call retried', async () => {
    const shared = { storage: memoryStorage(), transientStorage: memoryStorage() };
    const app = client(shared);
    await app.signIn();
    const tokens = (await app.handleRedirect(gateway.authorize(navigatedTo)))!;
    gateway.accessTokens.delete(tokens.accessToken);
    assert.equal((await app.getUser()).id, 'usr_1');
  });

  test('a completion that answers with tool calls only has null content, and its tool calls are typed', async () => {
    const app = client();
    await app.signIn();
    await app.handleRedirect(gateway.authorize(navigatedTo));
    const reply = await app.chat({
      model: 'tollgate/echo',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'use a tool' }] }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const message = reply.choices[0]!.message;
    // Typed `string | null`: an app that read it as a string alone would call a method on null here.
    const content: string | null = message.content;
    assert.equal(content, null);
    assert.equal(message.tool_calls?.[0]?.function.name, 'lookup');
  });

  test('chat errors are classified as §7.2 says; streams yield deltas and fail on an error frame', async () => {
    const app = client();
    await app.signIn();
    await app.handleRedirect(gateway.authorize(navigatedTo));
    const ask = (content: string) => app.chat({ model: 'tollgate/echo', messages: [{ role: 'user', content }] });
    await assert.rejects(
      ask('limit'),
      (e: unknown) =>
        e instanceof TollgateRestrictionError &&
        e.restriction.kind === 'spending_limit' &&
        e.restriction.requested === 0.5,
    );
    await assert.rejects(
      ask('crash'),
      (e: unknown) => e instanceof TollgateRequestError && e.status === 500 && e.message === 'upstream exploded',
    );
    let text = '';
    for await (const delta of app.chatStream({
      model: 'tollgate/echo',
      messages: [{ role: 'user', content: 'one two three' }],
    }))
      text += delta;
    assert.equal(text, 'one two three ');
    const pieces: string[] = [];
    await assert.rejects(
      async () => {
        for await (const delta of app.chatStream({
          model: 'tollgate/echo',
          messages: [{ role: 'user', content: 'cut here' }],
        }))
          pieces.push(delta);
      },
      (e: unknown) => e instanceof TollgateRestrictionError && e.code === 'UPSTREAM_ERROR',
    );
    assert.deepEqual(pieces, ['cut ', 'here ']);
    await assert.rejects(
      async () => {
        for await (const _ of app.chatStream({
          model: 'tollgate/echo',
          messages: [{ role: 'user', content: 'limit' }],
        }))
          void _;
      },
      (e: unknown) => e instanceof TollgateRestrictionError && e.status === 429,
    );
  });

  test('signed out, calls fail without a request', async () => {
    await assert.rejects(client().getUser(), (e: unknown) => e instanceof TollgateRequestError && e.status === 401);
  });
});
