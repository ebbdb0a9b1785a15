import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

/** Library build of the SDK: ESM bundles for browsers (`dist/tollgate-sdk.js`, `dist/react.js`). */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    lib: {
      entry: { 'tollgate-sdk': 'src/index.ts', react: 'src/react.ts' },
      formats: ['es'],
    },
    rollupOptions: { external: ['react'] },
  },
});
