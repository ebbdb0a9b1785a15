import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { renderPage } from '../platform/http/page.ts';

/** The repository's root, where `web/dist` and `packages/sdk/dist` are built. */
export const REPO_ROOT = new URL('../..', import.meta.url).pathname;
/** The built folders, by what they hold. */
export const BUILT = {
  dashboard: join(REPO_ROOT, 'web/dist/dashboard'),
  demo: join(REPO_ROOT, 'web/dist/demo'),
  sdk: join(REPO_ROOT, 'packages/sdk/dist'),
};

/**
 * The dashboard's and the demo's policy. Security invariant: no inline script and no script from elsewhere
 * runs on these pages (Vite emits only files under `assets/`; the SDK's dialogs use constructed style sheets),
 * so an injected `<script>` or `onclick` does nothing; they talk to this deployment only (its public origin
 * too, which the demo is configured with, should the page be opened under another name) and cannot be framed.
 */
export function appCsp(publicOrigin: string): string {
  return `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self' ${publicOrigin}; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`;
}

const NOT_BUILT = renderPage(
  'Not built',
  '<h1>Not built yet</h1><p>The browser parts of Tollgate are built by <code>npm run build</code> (run by <code>npm start</code> and <code>npm test</code>).</p>',
);

/**
 * Serves one single-page app: `pagePath` answers its `index.html` (never cached, so a new build shows at
 * once) and `<base>assets/` its fingerprinted files (cached for a year: their names change with content).
 */
export async function serveApp(
  app: App,
  options: { folder: string; base: string; pagePaths: string[]; publicOrigin: () => string },
): Promise<void> {
  const assets = join(options.folder, 'assets');
  if (existsSync(assets)) {
    await app.register(fastifyStatic, {
      root: assets,
      prefix: `${options.base}assets/`,
      decorateReply: false,
      index: false,
      maxAge: '365d',
      immutable: true,
      schemaHide: true,
    });
  }
  const sendIndex = async (_request: unknown, reply: FastifyReply) => {
    const html = await readFile(join(options.folder, 'index.html'), 'utf8').catch(() => null);
    reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8');
    return html === null
      ? reply.code(503).send(NOT_BUILT)
      : reply.header('content-security-policy', appCsp(options.publicOrigin())).send(html);
  };
  for (const path of options.pagePaths) app.get(path, { schema: { hide: true } }, sendIndex);
}

/**
 * Serves the SDK's browser bundle at `/sdk/` (`/sdk/tollgate-sdk.js`), for apps that load it from the gateway.
 * Their pages are on other origins, and a browser fetches a module script (and the chunks it imports) in
 * CORS mode: every file answers `Access-Control-Allow-Origin: *` (public code, no credentials mode, so no
 * cookie rides along) and `Cross-Origin-Resource-Policy: cross-origin` (pages isolated with COEP may load it).
 */
export async function serveSdk(app: App): Promise<void> {
  if (!existsSync(BUILT.sdk)) return;
  await app.register(fastifyStatic, {
    root: BUILT.sdk,
    prefix: '/sdk/',
    decorateReply: false,
    index: false,
    maxAge: '1h',
    schemaHide: true,
    setHeaders(reply) {
      reply.header('access-control-allow-origin', '*');
      reply.header('cross-origin-resource-policy', 'cross-origin');
    },
  });
}
