import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAst } from 'rolldown/parseAst';

/**
 * The import rules (`.dependency-cruiser.cjs`), checked with dependency-cruiser.
 *
 * Why a skeleton: dependency-cruiser reads TypeScript through the `typescript` package's JavaScript API,
 * which TypeScript 7 (the native compiler this project uses) no longer has, so it cannot parse a `.ts` file
 * here. Each module is therefore parsed with oxc (rolldown's parser, already installed with Vite) and
 * written, under the same path in a temporary folder, as a `.js` file holding only its imports (type-only
 * and dynamic ones included), which dependency-cruiser then checks against the same rules. Run
 * `node scripts/import-rules.ts` to print the violations of the working tree.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The folders whose modules the rules are about. */
export const CHECKED_FOLDERS = ['src', 'packages'];

/** One broken rule: which rule, from which module to which. */
export interface Violation {
  rule: string;
  from: string;
  to: string;
}

/** What the check saw: how many modules, and the rules they break. */
export interface ImportReport {
  modules: number;
  violations: Violation[];
}

/** Every `.ts`/`.tsx` module under the checked folders (declaration files and built output left out). */
function modulesOf(root: string): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(relative(root, path));
    }
  };
  for (const folder of CHECKED_FOLDERS) walk(join(root, folder));
  return found;
}

/** The specifiers a module imports: static, type-only, re-exports and dynamic `import('…')` with a literal. */
function specifiersOf(path: string, code: string): string[] {
  const ast = parseAst(code, { lang: path.endsWith('.tsx') ? 'tsx' : 'ts' }, path);
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const n = node as { type?: string; source?: { type?: string; value?: unknown } };
    const isImport = ['ImportDeclaration', 'ExportNamedDeclaration', 'ExportAllDeclaration', 'ImportExpression'];
    if (n.type && isImport.includes(n.type) && typeof n.source?.value === 'string') found.push(n.source.value);
    for (const value of Object.values(node)) if (value && typeof value === 'object') visit(value);
  };
  visit(ast.body);
  return found;
}

/** The package.json `imports` (`#…`) and tsconfig `paths` aliases, as prefixes to project paths. */
function aliasesOf(root: string): Array<{ prefix: string; target: string; wildcard: boolean }> {
  const aliases: Array<{ prefix: string; target: string; wildcard: boolean }> = [];
  const add = (key: string, target: string) =>
    aliases.push({
      prefix: key.replace(/\*$/, ''),
      target: target.replace(/^\.\//, '').replace(/\*$/, ''),
      wildcard: key.endsWith('*'),
    });
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  for (const [key, value] of Object.entries(pkg.imports ?? {})) {
    const target = typeof value === 'string' ? value : ((value as Record<string, string>).default ?? '');
    if (target) add(key, target);
  }
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  for (const [key, targets] of Object.entries(tsconfig.compilerOptions?.paths ?? {}))
    add(key, (targets as string[])[0]);
  return aliases;
}

/** A specifier as the skeleton writes it: relative and `.js`, or null when it names a package. */
function skeletonSpecifier(from: string, specifier: string, aliases: ReturnType<typeof aliasesOf>): string | null {
  let target: string | null = null;
  if (specifier.startsWith('.')) target = join(dirname(from), specifier);
  else {
    for (const alias of aliases) {
      if (alias.wildcard ? specifier.startsWith(alias.prefix) : specifier === alias.prefix) {
        target = alias.target + (alias.wildcard ? specifier.slice(alias.prefix.length) : '');
        break;
      }
    }
  }
  if (target === null) return null;
  const path = relative(dirname(from), target).replace(/\.tsx?$/, '.js');
  return path.startsWith('.') ? path : `./${path}`;
}

/** Writes the import skeleton of the project at `root` (plus `extra` modules, path → code) into `into`. */
export function writeSkeleton(root: string, into: string, extra: Record<string, string> = {}): number {
  const aliases = aliasesOf(root);
  const sources = new Map<string, string>();
  for (const path of modulesOf(root)) sources.set(path, readFileSync(join(root, path), 'utf8'));
  for (const [path, code] of Object.entries(extra)) sources.set(path, code);
  for (const [path, code] of sources) {
    const lines = specifiersOf(path, code)
      .map((specifier) => skeletonSpecifier(path, specifier, aliases))
      .filter((specifier): specifier is string => specifier !== null)
      .map((specifier) => `import ${JSON.stringify(specifier)};`);
    const out = join(into, path.replace(/\.tsx?$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, lines.join('\n') + '\n');
  }
  return sources.size;
}

/**
 * Checks the project at `root` against `.dependency-cruiser.cjs`, with `extra` modules added (path relative
 * to the root → TypeScript source): what the test of the check plants a violation with.
 */
export function checkImportRules(root = ROOT, extra: Record<string, string> = {}): ImportReport {
  const skeleton = mkdtempSync(join(tmpdir(), 'tollgate-imports-'));
  try {
    writeFileSync(join(skeleton, 'package.json'), '{ "type": "module" }\n');
    writeSkeleton(root, skeleton, extra);
    const cruiser = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
    const run = spawnSync(
      process.execPath,
      [cruiser, '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json', ...CHECKED_FOLDERS],
      { cwd: skeleton, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
    );
    if (!run.stdout) throw new Error(`dependency-cruiser failed: ${run.stderr}`);
    const result = JSON.parse(run.stdout) as {
      summary: { totalCruised: number; violations: Array<{ rule: { name: string }; from: string; to: string }> };
    };
    const js = (path: string) => path.replace(/\.js$/, '.ts');
    return {
      modules: result.summary.totalCruised,
      violations: result.summary.violations.map((v) => ({ rule: v.rule.name, from: js(v.from), to: js(v.to) })),
    };
  } finally {
    rmSync(skeleton, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const report = checkImportRules();
  for (const v of report.violations) console.log(`${v.rule}: ${v.from} → ${v.to}`);
  console.log(`${report.modules} modules, ${report.violations.length} violations`);
  process.exitCode = report.violations.length ? 1 : 0;
}
