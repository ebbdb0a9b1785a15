import type { Feature } from '../platform/feature.ts';
import type { AppContext } from '../platform/context.ts';
import { BUILT, serveApp, serveSdk } from './static.ts';
import { demoClientRegistrar } from './demo-client.ts';

/**
 * The browser side: the dashboard at `/`, the demo app at `/demo/` (with its OAuth client), and the SDK
 * bundle at `/sdk/`. All three are built by Vite (`npm run build`) into folders served as they are.
 */
export function createWebFeature(ctx: AppContext): Feature {
  return {
    name: 'web',
    async register(app) {
      // Read on each request: with PORT=0 the public address is only known once the server listens.
      const publicOrigin = () => new URL(ctx.config.PUBLIC_BASE_URL).origin;
      await serveApp(app, { folder: BUILT.dashboard, base: '/', pagePaths: ['/', '/index.html'], publicOrigin });
      await serveApp(app, {
        folder: BUILT.demo,
        base: '/demo/',
        pagePaths: ['/demo/', '/demo/index.html'],
        publicOrigin,
      });
      await serveSdk(app);

      app.get('/demo', { schema: { hide: true } }, async (request, reply) => {
        const query = request.url.indexOf('?');
        return reply.redirect(`/demo/${query >= 0 ? request.url.slice(query) : ''}`, 308);
      });

      const demoConfig = demoClientRegistrar(ctx);
      app.get('/demo/config.json', { schema: { hide: true } }, async (_request, reply) => {
        reply.header('cache-control', 'no-store');
        return demoConfig();
      });
    },
  };
}
