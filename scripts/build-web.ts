// Builds the browser parts the gateway serves: the SDK bundle (packages/sdk/dist, served at /sdk/), the
// dashboard (web/dist/dashboard, served at /) and the demo app (web/dist/demo, served at /demo/); then the
// published packages' type declarations (and @tollgate/wire's JavaScript), which an app's `tsc` reads from
// node_modules: shipped `.ts` sources would be type-checked under the app's own compiler options and fail.
// Runs before `npm start` and `npm test` (prestart/pretest); takes a few seconds.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { build } from 'vite';

const configs = ['packages/sdk/vite.config.ts', 'web/dashboard/vite.config.ts', 'web/demo/vite.config.ts'];
const started = performance.now();
for (const configFile of configs) await build({ configFile, logLevel: 'warn' });
// The wire package first: the SDK's declarations import its types from packages/wire/dist, as an app's would.
rmSync('packages/wire/dist', { recursive: true, force: true });
for (const project of ['packages/wire/tsconfig.build.json', 'packages/sdk/tsconfig.build.json'])
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
console.log(
  `built the SDK, the dashboard, the demo and the packages' types in ${Math.round(performance.now() - started)} ms`,
);
