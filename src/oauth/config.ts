import Type, { type Static } from 'typebox';

/** The OAuth clients' throttle. Part of the one configuration schema (src/config.ts). */
export const OAuthConfigSection = Type.Object({
  RATE_LIMIT_OAUTH_CLIENT_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 6000,
    description:
      "Successful token, revocation and introspection answers per minute per OAuth app (and refused grants of a confidential app that gave its right secret); a public app's, which carry no secret, per app and client address; 0 turns it off.",
  }),
  OAUTH_CLIENT_FAILURES_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 30,
    description:
      "Failed token, revocation and introspection requests (bad client authentication, invalid grant…) per minute per OAuth app and client address, past which that address is refused for the app until the minute ends (a confidential app's refused grant apart, when it gave its right secret); 0 turns it off.",
  }),
  OAUTH_LOOPBACK_ANY_PORT: Type.Boolean({
    default: false,
    description:
      'OAuth: accept an `http://127.0.0.1` or `http://[::1]` redirect URI on any port, when it equals a registered one but for the port (registered with another port or none), for CLIs and desktop apps that listen on a port the system picks (RFC 8252 §7.3). Off: every redirect URI matches exactly, port included.',
  }),
});

/** This section, parsed. */
export type OAuthConfig = Static<typeof OAuthConfigSection>;
