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
    rollupOptions: {
      external: ['react'],
      output: {
        // Next.js's App Router treats a module as server code unless it opens with this directive, and refuses the
        // React entry's hooks there. The bundler drops (and warns of) a directive written in a source module, so it
        // is added to the built entry, after minification. The plain client stays universal: no directive.
        postBanner: (chunk) => (chunk.isEntry && chunk.name === 'react' ? "'use client';" : ''),
      },
    },
  },
});
