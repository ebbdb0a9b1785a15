import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onPinnedRuntime, pinnedNodeMajor } from './load-provider.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** What a fresh process prints on stderr when it evaluates `code` (an ES module) in the project. */
function stderrOf(code: string): string {
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return result.stderr;
}

it('oidc-provider\'s bare import warns "Unsupported runtime" on the pinned Node 26, a Current release (no process.release.lts)', () => {
  assert.equal(process.release.lts, undefined);
  assert.match(stderrOf("await import('oidc-provider');"), /oidc-provider WARNING: Unsupported runtime/);
});

it('loading it through loadOidcProvider on the pinned Node prints nothing, and keeps console.warn working', () => {
  assert.equal(Number(process.versions.node.split('.')[0]), pinnedNodeMajor());
  const stderr = stderrOf(
    "const { loadOidcProvider } = await import('./src/oauth/load-provider.ts'); await loadOidcProvider(); console.warn('still here');",
  );
  assert.equal(stderr, 'still here\n');
});

it('on any other runtime the warning is left alone', () => {
  assert.equal(onPinnedRuntime(process.versions), true);
  assert.equal(onPinnedRuntime({ ...process.versions, node: '25.1.0' }), false);
  assert.equal(onPinnedRuntime({ ...process.versions, bun: '1.3.0' } as NodeJS.ProcessVersions), false);
});
