import { it } from 'node:test';
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Every import or re-export statement of the browser code that names the wire package. */
function wireImports(): Array<{ file: string; statement: string }> {
  const files = globSync(['packages/sdk/src/**/*.ts', 'web/**/*.{ts,tsx}'], { cwd: root }).filter(
    (file) => !file.includes('/dist/'),
  );
  return files.flatMap((file) =>
    [
      ...readFileSync(`${root}/${file}`, 'utf8').matchAll(
        /^(?:import|export)\b[^;]*?from\s+'(?:@tollgate\/wire|#wire\/)[^']*'/gms,
      ),
    ].map((match) => ({ file, statement: match[0] })),
  );
}

it('the SDK and the browser apps take only types from the wire package, so their bundles carry no TypeBox', () => {
  const imports = wireImports();
  assert.ok(
    imports.some(({ file }) => file.startsWith('packages/sdk/')),
    'the SDK no longer reads the wire types',
  );
  for (const { file, statement } of imports)
    assert.match(statement, /^(import|export) type\b/, `${file} takes a value from the wire package: ${statement}`);
});
