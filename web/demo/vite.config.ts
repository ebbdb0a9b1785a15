import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

/**
 * The demo app: a plain page that imports `@tollgate/sdk` as any third-party app would (resolved here to the
 * package's source). `vite build` writes `web/dist/demo`, served by the gateway at `/demo/`.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/demo/',
  logLevel: 'warn',
  resolve: { alias: { '@tollgate/sdk': fileURLToPath(new URL('../../packages/sdk/src/index.ts', import.meta.url)) } },
  build: { outDir: '../dist/demo', emptyOutDir: true, sourcemap: true },
});
