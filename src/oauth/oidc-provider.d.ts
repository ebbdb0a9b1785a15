/**
 * The small part of oidc-provider 9's API that Tollgate uses (the package ships no types). Kept narrow on
 * purpose: anything not declared here is not relied on.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  /** What an adapter stores for one model instance (a token, a grant, a session…). */
  export type AdapterPayload = Record<string, any> & {
    grantId?: string;
    userCode?: string;
    uid?: string;
    accountId?: string;
    clientId?: string;
    consumed?: number;
  };

  /** The storage interface oidc-provider calls, one instance per model name. */
  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export interface StoredToken {
    jti: string;
    accountId: string;
    clientId: string;
    grantId: string;
    scope?: string;
    exp: number;
    iat: number;
    consumed?: number;
  }

  export interface GrantInstance {
    jti: string;
    accountId: string;
    clientId: string;
    addOIDCScope(scope: string): void;
    getOIDCScope(): string;
    save(ttl?: number): Promise<string>;
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, any> };
    params: Record<string, any>;
    session?: { accountId?: string };
    grantId?: string;
    returnTo: string;
  }

  /** A browser's provider session (the `Session` model). */
  export interface SessionInstance {
    jti: string;
    accountId?: string;
    destroy(): Promise<void>;
  }

  export interface ClientInstance {
    clientId: string;
    clientSecret?: string;
    clientName?: string;
    /** The registered redirect URIs, as given. */
    redirectUris: string[];
    compareClientSecret(actual: string): boolean | Promise<boolean>;
    /** Whether a request may name this redirect URI (authorization, and where an error is sent). */
    redirectUriAllowed(value: unknown): boolean;
  }

  export class Provider {
    constructor(issuer: string, configuration: Record<string, any>);
    issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    use(middleware: (ctx: any, next: () => Promise<void>) => Promise<void> | void): void;
    on(event: string, listener: (...args: any[]) => void): void;
    urlFor(name: string, options?: Record<string, unknown>): string;
    /** The name of one of the provider's cookies (`session`, `interaction`, `resume`). */
    cookieName(type: 'session' | 'interaction' | 'resume'): string;
    /** Koa's context over a raw request: its `cookies.get` checks signatures with the provider's cookie keys. */
    createContext(req: IncomingMessage, res: ServerResponse): { cookies: { get(name: string): string | undefined } };
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    Client: { find(id: string): Promise<ClientInstance | undefined>; prototype: ClientInstance };
    AccessToken: { find(value: string): Promise<StoredToken | undefined> };
    Session: { find(id: string): Promise<SessionInstance | undefined> };
    /** An interaction by its uid, unexpired, without interactionDetails' check of its provider session. */
    Interaction: { find(uid: string): Promise<InteractionDetails | undefined> };
    Grant: {
      new (input: { accountId: string; clientId: string }): GrantInstance;
      find(id: string): Promise<GrantInstance | undefined>;
    };
  }

  export const errors: {
    InvalidGrant: new (description?: string) => Error;
    AccessDenied: new (description?: string) => Error;
    /** `invalid_client` (401): the client's authentication failed. */
    InvalidClientAuth: new (detail?: string) => Error;
  };

  export default Provider;
}
