// Builds the browser parts the gateway serves: the SDK bundle (packages/sdk/dist, served at /sdk/), the
// dashboard (web/dist/dashboard, served at /) and the demo app (web/dist/demo, served at /demo/).
// Runs before `npm start` and `npm test` (prestart/pretest); takes about a second.
import { build } from 'vite';

const configs = ['packages/sdk/vite.config.ts', 'web/dashboard/vite.config.ts', 'web/demo/vite.config.ts'];
const started = performance.now();
for (const configFile of configs) await build({ configFile, logLevel: 'warn' });
console.log(`built the SDK, the dashboard and the demo in ${Math.round(performance.now() - started)} ms`);
