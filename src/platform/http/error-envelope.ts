import type { ApiError } from '../errors.ts';

/**
 * How a route family shapes its errors: `api` is `{ error: { code, message, type, ... } }` (contract §2.2,
 * decisions.md), `keys` is `{ success: false, error: "<text>" }` (contract §7.1), `oauth` is RFC 6749's
 * `{ error: "<code>", error_description: "<text>" }` (the OAuth endpoints, whose clients read only that),
 * `page` is an HTML page for a person in a browser (the routes that serve pages; see error-page.ts).
 */
export type ErrorEnvelope = 'api' | 'keys' | 'oauth' | 'page';

/**
 * A route's own error body, for an inbound protocol whose clients read another envelope (Anthropic's
 * `{ type: "error", error: { ... } }`): given the ApiError, it returns the body; the server still sets the
 * status and the error's headers. Set it as the route's `config.errorRenderer`; it wins over `envelope`.
 */
export type ErrorRenderer = (error: ApiError) => unknown;
