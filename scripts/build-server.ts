// Builds the server bundle that `serve` runs (src/platform/server-bundle.ts says why and when): src/cli.ts and
// what it loads, packages included, into dist/server, stamped with the digest of the sources it was built
// from. Part of `npm run build` (so of `npm start` and `npm test`); takes about a second.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rolldown } from 'rolldown';
import {
  PROJECT_DIR,
  SERVER_BUNDLE_DIR,
  SERVER_BUNDLE_ENTRY,
  SERVER_BUNDLE_STAMP,
  sourceDigest,
} from '../src/platform/server-bundle.ts';

/**
 * Packages left to Node's loader, each for a reason:
 * - `oidc-provider`, `stripe`, `ioredis`: loaded on first use only (the first OAuth request, top-up, or a
 *   configured REDIS_URL); in the bundle they would load with everything else.
 * - `@fastify/static`, `@fastify/swagger-ui`: serve files found next to their own code (`__dirname`).
 */
const EXTERNAL = new Set(['oidc-provider', 'stripe', 'ioredis', '@fastify/static', '@fastify/swagger-ui']);

const packageName = (id: string) =>
  id
    .split('/')
    .slice(0, id.startsWith('@') ? 2 : 1)
    .join('/');

const NON_ASCII = /[^\x00-\x7f]/g;

/**
 * `code` with every non-ASCII UTF-16 unit written as a `\uXXXX` escape. Run after rolldown's own
 * `charset: 'ascii'`, which leaves such characters only in the licence comments it keeps.
 */
function escapeNonAscii(code: string): string {
  return code.replace(NON_ASCII, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const started = performance.now();
const digest = sourceDigest();
const outDir = join(PROJECT_DIR, SERVER_BUNDLE_DIR);
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const bundle = await rolldown({
  input: join(PROJECT_DIR, 'src/cli.ts'),
  platform: 'node',
  logLevel: 'warn',
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !id.startsWith('\0') && EXTERNAL.has(packageName(id)),
  onLog(level, log, handler) {
    // Packages' own `eval` and `new Function` (ajv's compiled validators) are theirs to keep.
    if (log.code === 'EVAL') return;
    handler(level, log);
  },
});
await bundle.write({
  dir: outDir,
  format: 'esm',
  entryFileNames: SERVER_BUNDLE_ENTRY,
  // For `node --enable-source-maps` when a stack trace should name the sources; unread otherwise.
  sourcemap: true,
  // V8 keeps a module's source text for as long as the module lives (to compile its functions lazily), one
  // byte per character when every character is Latin-1 and two bytes otherwise. One em dash in a comment
  // made the 3.6 MB main chunk cost 7.3 MB of heap. So: non-ASCII characters escaped in the code, doc
  // comments dropped (only licences are kept), and what is left (a licence's name) escaped below.
  charset: 'ascii',
  comments: { legal: true, annotation: false, jsdoc: false },
});
await bundle.close();
for (const file of readdirSync(outDir).filter((name) => name.endsWith('.js'))) {
  const code = readFileSync(join(outDir, file), 'utf8');
  if (code.search(NON_ASCII) !== -1) writeFileSync(join(outDir, file), escapeNonAscii(code));
}
writeFileSync(join(outDir, SERVER_BUNDLE_STAMP), JSON.stringify({ digest, builtAt: new Date().toISOString() }) + '\n');
console.log(`built the server bundle (${SERVER_BUNDLE_DIR}) in ${Math.round(performance.now() - started)} ms`);
