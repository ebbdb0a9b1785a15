/**
 * Every scope an OAuth app can be granted (decisions.md "OAuth"), then the OpenID Connect scopes of "Sign in
 * with Tollgate" (decisions.md "Added 2026-11-23"), which grant no API access, only who the user is.
 */
export const SCOPES = [
  'read',
  'write',
  'billing:read',
  'apikeys:read',
  'apikeys:write',
  'ai:chat',
  'ai:completions',
  'ai:models',
  'ai:images',
  'ai:embeddings',
  'ai:audio',
  'offline_access',
  'openid',
  'profile',
  'email',
] as const;
export type Scope = (typeof SCOPES)[number];
