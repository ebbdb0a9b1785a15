import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const read = (name: string) => JSON.parse(readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8'));

// `npm install` / `npm ci` print nothing a user cannot act on (issue 16): checked on the files npm reads.
it('allowScripts approves every dependency with an install script (npm 11 warns about the others)', () => {
  const allowed = read('package.json').allowScripts ?? {};
  const withScripts = Object.entries<any>(read('package-lock.json').packages)
    .filter(([, entry]) => entry.hasInstallScript)
    .map(([path]) => path.replace(/^.*node_modules\//, ''));
  assert.ok(withScripts.includes('node'), 'the pinned node package runs a preinstall script');
  for (const name of withScripts)
    assert.equal(allowed[name], true, `${name} has an install script that allowScripts does not approve`);
});

it('devEngines names the Node that runs npm, so npm does not hold the system Node to engines (the pinned Node 26)', () => {
  const pkg = read('package.json');
  assert.equal(pkg.engines.node, '>=26');
  assert.equal(pkg.devEngines.runtime.name, 'node');
  assert.equal(pkg.devEngines.runtime.onFail, 'warn');
  assert.equal(pkg.dependencies.node.split('.')[0], '26');
});
