import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(root + path, 'utf8');

it('the gateway itself carries the MIT licence its packages ship, under the same holder', () => {
  // Without a licence at the root only packages/* were open source: the gateway's own code had no grant at all.
  for (const pkg of ['sdk', 'wire']) assert.equal(read('LICENSE'), read(`packages/${pkg}/LICENSE`), pkg);
  assert.equal(JSON.parse(read('package.json')).license, 'MIT');
  assert.match(read('README.md'), /## Licence\n\nMIT\b[^\n]*\(LICENSE\)/);
});
