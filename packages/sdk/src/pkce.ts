/** PKCE (RFC 7636) with S256 only, on Web Crypto so the same code runs in browsers and in Node. */

function base64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** A random base64url string of `bytes` bytes of entropy (32 bytes give a 43-character PKCE verifier). */
export function randomToken(bytes = 32): string {
  return base64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/**
 * The S256 code challenge of a verifier: base64url(SHA-256(ASCII(verifier))). Browsers give Web Crypto's digest
 * to secure pages only (https, localhost): a plain-http page is told so, not "cannot read properties of undefined".
 */
export async function s256Challenge(verifier: string): Promise<string> {
  if (!globalThis.crypto?.subtle)
    throw new Error('Sign-in needs a secure page (https, or localhost while developing).');
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64Url(new Uint8Array(digest));
}
