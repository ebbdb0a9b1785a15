import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

/**
 * The dashboard SPA (Preact). `vite build` writes `web/dist/dashboard`, which the gateway serves at `/`.
 * `vite` (dev) proxies the API to a gateway on http://127.0.0.1:3000.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: '../dist/dashboard', emptyOutDir: true, sourcemap: true },
  server: { proxy: { '/api': 'http://127.0.0.1:3000', '/demo': 'http://127.0.0.1:3000' } },
});
