import { hash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The server bundle (issue 18, memory): `npm run build` writes the server and the packages it loads into a few
 * files under `dist/server` (scripts/build-server.ts), and `serve` runs those instead of the ~2,100 modules of
 * `src` and `node_modules` when they were built from the sources as they are now. Each ES module costs V8 its
 * own records and keeps its own source text; loading a few files instead of ~2,100 takes ~20 MB off the
 * resident memory under load, with the same code.
 *
 * Invariant: a bundle runs only when it was built from exactly the sources on disk ({@link sourceDigest}
 * matches), so an edited checkout never serves yesterday's code. Anything else serves from `src`.
 */

/** The project's folder: this file is `src/platform/server-bundle.ts` in the sources and `dist/server/*.js` in the bundle, two levels down either way. */
export const PROJECT_DIR = fileURLToPath(new URL('../..', import.meta.url));

/** Where the bundle is written, relative to the project's folder. */
export const SERVER_BUNDLE_DIR = 'dist/server';
/** The bundle's entry: the CLI (`src/cli.ts`), built. */
export const SERVER_BUNDLE_ENTRY = 'cli.js';
/** Written beside the bundle: the {@link sourceDigest} it was built from. */
export const SERVER_BUNDLE_STAMP = 'source.json';

/** What decides the bundle's content, besides `src`: the packages' versions and the build itself. */
const OTHER_INPUTS = ['package-lock.json', 'scripts/build-server.ts'];

/**
 * SHA-256 over the path and content of every non-test `.ts` file under `src`, and of {@link OTHER_INPUTS}, in
 * a fixed order. Reads ~1.3 MB; a few milliseconds.
 */
export function sourceDigest(projectDir: string = PROJECT_DIR): string {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) files.push(path);
    }
  };
  walk(join(projectDir, 'src'));
  files.sort();
  for (const input of OTHER_INPUTS) if (existsSync(join(projectDir, input))) files.push(join(projectDir, input));
  const parts: Buffer[] = [];
  for (const file of files) {
    const content = readFileSync(file);
    parts.push(Buffer.from(`${relative(projectDir, file)}\0${content.length}\0`), content);
  }
  return hash('sha256', Buffer.concat(parts), 'hex');
}

/** Whether `serve` can run the bundle: its entry, or why not. */
export type ServerBundleState =
  { state: 'fresh'; entry: string } | { state: 'absent' } | { state: 'stale'; reason: string };

/** Reads the bundle's stamp and compares it with the sources on disk. */
export function serverBundleState(projectDir: string = PROJECT_DIR): ServerBundleState {
  const dir = join(projectDir, SERVER_BUNDLE_DIR);
  const entry = join(dir, SERVER_BUNDLE_ENTRY);
  let stamp: { digest?: unknown };
  try {
    stamp = JSON.parse(readFileSync(join(dir, SERVER_BUNDLE_STAMP), 'utf8'));
  } catch {
    return { state: 'absent' };
  }
  if (!existsSync(entry)) return { state: 'absent' };
  if (stamp.digest !== sourceDigest(projectDir))
    return { state: 'stale', reason: 'the sources changed after it was built' };
  return { state: 'fresh', entry };
}
