import { isIP } from 'node:net';
import { guardedLookup, isPrivateAddress, type UrlPolicy } from './url-guard.ts';

// Not `import … from 'node:http'`: Node builds an ES module facade of a built-in by reading every export, and
// node:http's `WebSocket`, `MessageEvent` and `CloseEvent` getters then load Node's own copy of undici
// (~15 MB resident, never used: the gateway calls upstreams with the npm undici). `getBuiltinModule` hands
// over the CommonJS module without a facade.
const { request: httpRequest } = process.getBuiltinModule('node:http');
const { request: httpsRequest } = process.getBuiltinModule('node:https');

/** Characters of a receiver's answer kept with the delivery; the rest is never read past {@link READ_LIMIT}. */
export const EXCERPT_LENGTH = 200;
const READ_LIMIT = 1024;

/** The outcome of one attempt: the receiver's status and an excerpt of its answer, or why there was none. */
export interface AttemptResult {
  status: number | null;
  excerpt: string | null;
  error: string | null;
}

/**
 * POSTs one signed delivery. Redirects are not followed (a 3xx is a failed attempt: following one would let a
 * receiver point the gateway at an address the guard refused). The whole attempt — connect, answer, the
 * first bytes of the body — has `timeoutMs`; only {@link READ_LIMIT} bytes of the answer are read.
 */
export function sendAttempt(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
  policy: UrlPolicy,
): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const target = new URL(url);
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    // An IP literal is connected to without a lookup: the guard checks it here instead.
    if (isIP(host) && !policy.allowPrivate && isPrivateAddress(host))
      return finish({ status: null, excerpt: null, error: 'refused: private address' });
    if (target.protocol === 'http:' && !policy.allowHttp)
      return finish({ status: null, excerpt: null, error: 'refused: http:// is not allowed' });
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    timer = setTimeout(() => {
      request.destroy();
      finish({ status: null, excerpt: null, error: `timeout after ${timeoutMs} ms` });
    }, timeoutMs);
    const request = send(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(body.length) },
        lookup: guardedLookup(policy) as never,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let length = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_LENGTH);
          finish({ status: response.statusCode ?? null, excerpt: excerpt || null, error: null });
          response.destroy();
        };
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          length += chunk.length;
          if (length >= READ_LIMIT) done();
        });
        response.on('end', done);
        response.on('error', done);
      },
    );
    request.on('error', (error) => {
      const reason =
        error.name === 'PrivateAddressError'
          ? 'refused: private address'
          : `network: ${(error as NodeJS.ErrnoException).code ?? error.message}`;
      finish({ status: null, excerpt: null, error: reason.slice(0, 200) });
    });
    request.end(body);
  });
}
