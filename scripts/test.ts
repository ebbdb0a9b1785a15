// Runs every test file (src/**/*.test.ts and packages/*/test/**/*.test.ts) with Node's test runner.
// Test files run two at a time; each suite has its own database, so they never collide.
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';

const patterns = process.argv.slice(2);
const files = globSync(patterns.length ? patterns : ['src/**/*.test.ts', 'packages/*/test/**/*.test.ts']).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
