import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';

/**
 * The client-authenticated OAuth endpoints are handed to oidc-provider after Fastify read the form (the
 * per-app throttle needs the client id first). oidc-provider reads the body from the request stream itself;
 * finding it consumed, it falls back to `req.body`, and prints "already parsed request body detected" on
 * the first such request of every process. Instead, the bytes Fastify read are kept as they arrive
 * ({@link keepBodyBytes}) and oidc-provider is given a view of the request whose stream yields them again
 * ({@link withBodyReplayed}): it parses the very bytes the client sent, as it would without Fastify.
 */
const kept = new WeakMap<FastifyRequest, Buffer[]>();

/** A `preParsing` hook: passes the body through unchanged, keeping a copy of its bytes for {@link withBodyReplayed}. */
export async function keepBodyBytes(request: FastifyRequest, _reply: unknown, payload: Readable): Promise<Readable> {
  const chunks: Buffer[] = [];
  kept.set(request, chunks);
  const copy = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done(null, chunk);
    },
  });
  payload.on('error', (error) => copy.destroy(error));
  return payload.pipe(copy);
}

/**
 * `request.raw` as oidc-provider should see it: the same request (headers, socket, everything else read
 * through to it), readable once more, yielding the body bytes Fastify read. Without kept bytes, `raw` itself.
 */
export function withBodyReplayed(request: FastifyRequest): IncomingMessage {
  const chunks = kept.get(request);
  const raw = request.raw;
  if (!chunks) return raw;
  const body = Buffer.concat(chunks);
  return new Proxy(raw, {
    get(target, property) {
      if (property === 'readable') return true;
      if (property === 'iterator')
        return () =>
          (async function* replay() {
            if (body.length) yield body;
          })();
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
