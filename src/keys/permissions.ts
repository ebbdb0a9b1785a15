/** The permissions an API key can carry (contract §5.3). */
export const KEY_PERMISSIONS = [
  'ai:chat',
  'ai:completions',
  'ai:models',
  'ai:images',
  'ai:embeddings',
  'ai:audio',
  'billing:read',
] as const;
export type KeyPermission = (typeof KEY_PERMISSIONS)[number];
