import type { FastifyInstance } from 'fastify';
import type { Job } from './jobs.ts';
import type { ApiError } from './errors.ts';
import type { ErrorEnvelope, ErrorRenderer } from './http/error-envelope.ts';

/**
 * A built feature, as the composition root (src/service.ts) registers it: its background jobs and the routes
 * and hooks it adds. Each feature's `create…Feature(deps)` returns one of these beside the API it offers the
 * features built after it; its migrations are listed apart (src/features.ts), since they run before any
 * feature is built.
 */
/** An OpenAPI security scheme whose scopes are the routes' `config.auth` scopes (see {@link Feature}). */
export interface ScopedSecurityScheme {
  name: string;
  scheme: Record<string, unknown>;
}

export interface Feature {
  name: string;
  jobs?: Job[];
  /**
   * The error envelope of the paths under each prefix, for what matches no route there (a 404): a route sets
   * its own in `config.envelope` or `config.errorRenderer`. A renderer gives an inbound protocol's own
   * envelope (Anthropic's under `/api/v1/messages`).
   */
  errorEnvelopes?: Record<string, ErrorEnvelope | ErrorRenderer>;
  /**
   * An OAuth 2.0 security scheme of the OpenAPI document (`components.securitySchemes[name]`), for the feature
   * that issues the access tokens: every route with `config.auth` then lists it too, once for each scope of
   * which the caller needs one, so the document says which scopes each route takes.
   */
  scopedSecurityScheme?: ScopedSecurityScheme;
  /** Sees every error the server answers with (for the feature's metrics); must not throw. */
  observeError?(error: ApiError): void;
  /** Called once at start, in the composition root's order, before the server listens. */
  register?(app: FastifyInstance): Promise<void> | void;
}
