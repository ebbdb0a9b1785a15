import {
  classifyResponse,
  readOrThrow,
  TollgateError,
  TollgateRequestError,
  TollgateRestrictionError,
} from './errors.ts';
import { randomToken, s256Challenge } from './pkce.ts';
import { browserStorage, memoryStorage, type TollgateStorage } from './storage.ts';
import { readServerSentEvents } from './sse.ts';
import type {
  AuthorizedApp,
  ChatCompletion,
  ChatRequest,
  TollgateBalance,
  TollgateTokens,
  TollgateUser,
} from './types.ts';

/** Options of {@link createTollgateClient}. */
export interface TollgateClientOptions {
  /** The gateway's address, e.g. `https://tollgate.example.com` (no trailing slash needed). */
  baseUrl: string;
  /** The app's OAuth client_id (`app_…`). */
  clientId: string;
  /** One of the redirect URIs registered for the app, matched exactly by the gateway. */
  redirectUri: string;
  /** Scopes to ask for; add `offline_access` to get a refresh token. */
  scopes: string[];
  /** Where tokens are kept (default `localStorage`, or memory outside a browser). */
  storage?: TollgateStorage;
  /** Where the PKCE verifier and state wait during the redirect (default `sessionStorage`, or memory). */
  transientStorage?: TollgateStorage;
  /** Refresh the access token this many seconds before it expires (default 60). */
  refreshMarginSeconds?: number;
  /** Endpoints, when they differ from the gateway's defaults under `/api/oauth`. */
  endpoints?: { authorization?: string; token?: string; revocation?: string };
  /** The fetch to use (default the global one). */
  fetch?: typeof fetch;
  /** Sends the browser to a URL (default `location.assign`). */
  navigate?: (url: string) => void;
  /** The current time in epoch ms (default `Date.now`); tests pass a clock. */
  now?: () => number;
}

/** An OAuth error from the authorization redirect or the token endpoint (RFC 6749 §4.1.2.1, §5.2). */
export class TollgateOAuthError extends TollgateError {
  override name = 'TollgateOAuthError';
  /**
   * The OAuth `error` code, e.g. `access_denied`, `invalid_grant`, or one detected here: `state_mismatch`, or
   * `issuer_mismatch` (the response's `iss` is missing or names another server, RFC 9207).
   */
  readonly error: string;
  constructor(error: string, description: string | undefined, status = 0) {
    super(description ? `${error}: ${description}` : error, status);
    this.error = error;
  }
}

/** What {@link TollgateClient.createAuthorizationRequest} returns. */
export interface AuthorizationRequest {
  url: string;
  state: string;
  codeVerifier: string;
}

/** A Tollgate client for one app; see {@link createTollgateClient}. */
export interface TollgateClient {
  readonly baseUrl: string;
  readonly clientId: string;
  /** Builds the authorize URL and keeps its verifier and state for {@link handleRedirect}; no request is made. */
  createAuthorizationRequest(options?: { prompt?: string; loginHint?: string }): Promise<AuthorizationRequest>;
  /** Sends the browser to the gateway's consent page (authorization code + PKCE S256); no REST call (contract §1). */
  signIn(options?: { prompt?: string; loginHint?: string }): Promise<void>;
  /**
   * Finishes the redirect: checks `state`, and `iss` when the gateway's metadata says it sends one (RFC 9207),
   * exchanges the code at the token endpoint and keeps the tokens.
   * Resolves null when `url` carries no authorization response (a normal page load).
   */
  handleRedirect(url?: string): Promise<TollgateTokens | null>;
  /** A valid access token (refreshed first when it is about to expire), or null when signed out. */
  getAccessToken(): Promise<string | null>;
  /** The kept tokens (null when signed out). */
  getTokens(): TollgateTokens | null;
  isSignedIn(): boolean;
  /** Revokes the tokens at the gateway (best effort) and forgets them. */
  signOut(): Promise<void>;
  /** An authenticated call to the gateway; errors are classified per contract §7.2. */
  request<T = unknown>(path: string, init?: RequestInit): Promise<T>;
  /** A chat completion. */
  chat(request: ChatRequest, options?: { signal?: AbortSignal }): Promise<ChatCompletion>;
  /** A streamed chat completion: yields the text deltas as they arrive (SSE). */
  chatStream(request: ChatRequest, options?: { signal?: AbortSignal }): AsyncGenerator<string, void, undefined>;
  getUser(): Promise<TollgateUser>;
  getBalance(): Promise<TollgateBalance>;
  /** The apps the user authorized; an app's own token sees only its own entry. */
  getAuthorizedApps(): Promise<AuthorizedApp[]>;
}

interface TokenResponse {
  access_token: string;
  token_type?: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
}

/**
 * Creates a client for one app. Tokens live in `storage` under a key per client_id; the PKCE verifier and
 * state live in `transientStorage` only between {@link TollgateClient.signIn} and
 * {@link TollgateClient.handleRedirect}, and are removed when read so a code is exchanged at most once.
 */
export function createTollgateClient(options: TollgateClientOptions): TollgateClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const storage = options.storage ?? browserStorage('localStorage') ?? memoryStorage();
  const transient = options.transientStorage ?? browserStorage('sessionStorage') ?? memoryStorage();
  const fetchImpl = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const now = options.now ?? (() => Date.now());
  const marginMs = (options.refreshMarginSeconds ?? 60) * 1000;
  const endpoints = {
    authorization: options.endpoints?.authorization ?? `${baseUrl}/api/oauth/authorize`,
    token: options.endpoints?.token ?? `${baseUrl}/api/oauth/token`,
    revocation: options.endpoints?.revocation ?? `${baseUrl}/api/oauth/revoke`,
  };
  const tokensKey = `tollgate:tokens:${options.clientId}`;
  const pendingKey = `tollgate:pkce:${options.clientId}`;
  let refreshing: Promise<TollgateTokens | null> | null = null;

  function readTokens(): TollgateTokens | null {
    try {
      const raw = storage.getItem(tokensKey);
      return raw ? (JSON.parse(raw) as TollgateTokens) : null;
    } catch {
      return null;
    }
  }

  function keepTokens(response: TokenResponse, previous?: TollgateTokens | null): TollgateTokens {
    const tokens: TollgateTokens = {
      accessToken: response.access_token,
      expiresAt: now() + (response.expires_in ?? 3600) * 1000,
      scope: response.scope ?? previous?.scope ?? options.scopes.join(' '),
      tokenType: response.token_type ?? 'Bearer',
    };
    // Refresh tokens rotate: the new one replaces the old, which the gateway now refuses.
    const refreshToken = response.refresh_token ?? previous?.refreshToken;
    if (refreshToken) tokens.refreshToken = refreshToken;
    storage.setItem(tokensKey, JSON.stringify(tokens));
    return tokens;
  }

  async function tokenRequest(params: Record<string, string>): Promise<TokenResponse> {
    const response = await fetchImpl(endpoints.token, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ ...params, client_id: options.clientId }).toString(),
    });
    const text = await response.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {}
    if (!response.ok || typeof body?.access_token !== 'string') {
      if (typeof body?.error === 'string')
        throw new TollgateOAuthError(body.error, body.error_description, response.status);
      throw (
        classifyResponse(response.ok ? 502 : response.status, text) ??
        new TollgateRequestError(response.status, 'The token endpoint answered without an access token.', body)
      );
    }
    return body as TokenResponse;
  }

  /**
   * Runs `task` holding this app's refresh lock, which every tab of the origin shares (Web Locks), so no
   * two tabs (sharing `localStorage`, so one refresh token) refresh at once. Without Web Locks, runs it now.
   */
  function withRefreshLock<T>(task: () => Promise<T>): Promise<T> {
    const locks = (globalThis.navigator as Navigator | undefined)?.locks;
    return locks ? locks.request(`tollgate:refresh:${options.clientId}`, task) : task();
  }

  function refresh(current: TollgateTokens): Promise<TollgateTokens | null> {
    // One refresh at a time, in this page and across tabs: with rotation, two concurrent refreshes would
    // present the same token twice, and reuse of a rotated token revokes the whole grant.
    refreshing ??= withRefreshLock(async () => {
      // Another tab may have refreshed (or been refused) while this one waited: its result is the one to use,
      // as presenting the token it rotated would be a reuse.
      const stored = readTokens();
      if (!stored?.refreshToken || stored.refreshToken !== current.refreshToken) return stored;
      try {
        return keepTokens(
          await tokenRequest({ grant_type: 'refresh_token', refresh_token: stored.refreshToken }),
          stored,
        );
      } catch (error) {
        if (error instanceof TollgateOAuthError && error.error === 'invalid_grant') {
          storage.removeItem(tokensKey);
          return null;
        }
        throw error;
      }
    }).finally(() => (refreshing = null));
    return refreshing;
  }

  async function getAccessToken(): Promise<string | null> {
    const tokens = readTokens();
    if (!tokens) return null;
    if (tokens.expiresAt - marginMs > now()) return tokens.accessToken;
    if (!tokens.refreshToken) {
      if (tokens.expiresAt > now()) return tokens.accessToken;
      storage.removeItem(tokensKey);
      return null;
    }
    return (await refresh(tokens))?.accessToken ?? null;
  }

  async function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
    const send = async (token: string | null) => {
      if (!token) throw new TollgateRequestError(401, 'Not signed in.', undefined);
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${token}`);
      if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return fetchImpl(`${baseUrl}${path}`, { ...init, headers });
    };
    let response = await send(await getAccessToken());
    // An access token can be revoked or expire early; one refresh and one retry, never more.
    const tokens = readTokens();
    if (response.status === 401 && tokens?.refreshToken) {
      const renewed = await refresh(tokens);
      if (renewed) response = await send(renewed.accessToken);
    }
    return response;
  }

  /**
   * The issuer whose `iss` an authorization response must carry: the gateway's, when its RFC 8414 metadata says
   * it sends one (`authorization_response_iss_parameter_supported`, as Tollgate's does). Null when the gateway
   * publishes no metadata or does not send `iss`: there is nothing to compare then.
   */
  async function expectedIssuer(): Promise<string | null> {
    const response = await fetchImpl(`${baseUrl}/.well-known/oauth-authorization-server`, {
      headers: { accept: 'application/json' },
    });
    if (response.status === 404) return null;
    const text = await readOrThrow(response);
    let metadata: { issuer?: unknown; authorization_response_iss_parameter_supported?: unknown } | undefined;
    try {
      metadata = JSON.parse(text);
    } catch {}
    if (metadata?.authorization_response_iss_parameter_supported !== true) return null;
    if (typeof metadata.issuer !== 'string')
      throw new TollgateRequestError(response.status, "The gateway's metadata names no issuer.", metadata);
    return metadata.issuer;
  }

  async function request<T>(path: string, init?: RequestInit): Promise<T> {
    const text = await readOrThrow(await authorizedFetch(path, init));
    return (text ? JSON.parse(text) : undefined) as T;
  }

  const client: TollgateClient = {
    baseUrl,
    clientId: options.clientId,

    async createAuthorizationRequest(extra = {}) {
      const codeVerifier = randomToken(32);
      const state = randomToken(16);
      const url = new URL(endpoints.authorization);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: options.clientId,
        redirect_uri: options.redirectUri,
        scope: options.scopes.join(' '),
        state,
        code_challenge: await s256Challenge(codeVerifier),
        code_challenge_method: 'S256',
        ...(extra.prompt ? { prompt: extra.prompt } : {}),
        ...(extra.loginHint ? { login_hint: extra.loginHint } : {}),
      }).toString();
      transient.setItem(pendingKey, JSON.stringify({ state, codeVerifier }));
      return { url: url.toString(), state, codeVerifier };
    },

    async signIn(extra) {
      const { url } = await client.createAuthorizationRequest(extra);
      (options.navigate ?? ((target: string) => globalThis.location.assign(target)))(url);
    },

    async handleRedirect(href = globalThis.location?.href) {
      const url = new URL(href);
      const code = url.searchParams.get('code');
      const error = url.searchParams.get('error');
      if (!code && !error) return null;
      const raw = transient.getItem(pendingKey);
      transient.removeItem(pendingKey);
      const pending = raw ? (JSON.parse(raw) as { state: string; codeVerifier: string }) : null;
      // The state ties this response to the request this browser started; anything else is forged or stale.
      if (!pending || url.searchParams.get('state') !== pending.state) {
        throw new TollgateOAuthError(
          'state_mismatch',
          'The authorization response does not match the sign-in this page started.',
        );
      }
      // The mix-up defence (RFC 9207): a response another server issued, sent here by an attacker or by a page
      // that signs in to several servers, must not have its code redeemed at this gateway (nor its error shown).
      const issuer = await expectedIssuer();
      const iss = url.searchParams.get('iss');
      if (issuer !== null && iss !== issuer) {
        throw new TollgateOAuthError(
          'issuer_mismatch',
          iss === null
            ? `The authorization response names no issuer (iss), which ${issuer} always sends: it is not from the server this sign-in started with.`
            : `The authorization response comes from ${iss}, not from ${issuer}, the server this sign-in started with.`,
        );
      }
      if (error) throw new TollgateOAuthError(error, url.searchParams.get('error_description') ?? undefined);
      const response = await tokenRequest({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: options.redirectUri,
        code_verifier: pending.codeVerifier,
      });
      return keepTokens(response);
    },

    getAccessToken,
    getTokens: readTokens,
    isSignedIn: () => readTokens() !== null,

    async signOut() {
      const tokens = readTokens();
      storage.removeItem(tokensKey);
      if (!tokens) return;
      for (const [token, hint] of [
        [tokens.refreshToken, 'refresh_token'],
        [tokens.accessToken, 'access_token'],
      ] as const) {
        if (!token) continue;
        await fetchImpl(endpoints.revocation, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token, token_type_hint: hint, client_id: options.clientId }).toString(),
        }).catch(() => {});
      }
    },

    request,

    chat(body, extra = {}) {
      return request<ChatCompletion>('/api/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ ...body, stream: false }),
        signal: extra.signal,
      });
    },

    async *chatStream(body, extra = {}) {
      const response = await authorizedFetch('/api/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ ...body, stream: true }),
        headers: { accept: 'text/event-stream' },
        signal: extra.signal,
      });
      if (!response.ok || !response.body) {
        await readOrThrow(response);
        throw new TollgateRequestError(response.status, 'The stream has no body.', undefined);
      }
      for await (const event of readServerSentEvents(response.body)) {
        if (event.data === '[DONE]') return;
        const payload = JSON.parse(event.data);
        // An error after the stream started arrives as a frame with the same envelope (decisions.md).
        if (event.event === 'error' || payload?.error) {
          throw (
            classifyResponse(response.status >= 400 ? response.status : 500, event.data) ??
            new TollgateRestrictionError(500, { kind: 'other', code: 'UNKNOWN', message: 'Stream failed.' }, {})
          );
        }
        const delta = payload?.choices?.[0]?.delta?.content;
        if (typeof delta === 'string' && delta) yield delta;
      }
    },

    getUser: () => request<TollgateUser>('/api/user/me'),
    getBalance: () => request<TollgateBalance>('/api/wallet/balance'),
    getAuthorizedApps: async () => (await request<{ apps: AuthorizedApp[] }>('/api/user/authorized-apps')).apps,
  };
  return client;
}
