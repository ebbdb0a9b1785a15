/**
 * Who may import whom (docs/architecture.md). Checked by src/architecture.test.ts through
 * scripts/import-rules.ts (`node scripts/import-rules.ts` prints the violations): dependency-cruiser cannot
 * parse TypeScript 7's sources itself, so it runs on a skeleton of the imports (see that script).
 *
 * A feature folder is `src/<name>/` or `src/protocols/<name>/`. Tests (`*.test.ts`) and test helpers
 * (`testing/` folders, `src/testing`) are tooling: they may reach into any feature, and are not held to the
 * layering rules (they are to the cycle rule).
 */
const TOOLING = ['\\.test\\.js$', '(^|/)testing/'];
const FEATURE = '^src/((?:protocols/)?[^/]+)/';

module.exports = {
  forbidden: [
    {
      name: 'platform-imports-no-feature',
      comment: 'src/platform is what the features share; it knows no feature (and not the composition root).',
      severity: 'error',
      from: { path: '^src/platform/', pathNot: TOOLING },
      to: { path: '^src/', pathNot: ['^src/platform/'] },
    },
    {
      name: 'no-circular',
      comment: 'No import cycle, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-other-feature-tables',
      comment:
        "A feature reaches another feature's data through that feature's API, never by importing its table types or migrations.",
      severity: 'error',
      from: { path: FEATURE, pathNot: TOOLING },
      to: { path: '^src/((?:protocols/)?[^/]+)/(tables|schema|migrations)\\.js$', pathNot: '^src/$1/' },
    },
    {
      name: 'features-do-not-import-the-composition-root',
      comment:
        'src/service.ts, src/features.ts and src/config.ts compose the features; a feature is handed what it uses.',
      severity: 'error',
      from: { path: FEATURE, pathNot: TOOLING },
      to: { path: '^src/(service|features|config)\\.js$' },
    },
    {
      name: 'sdk-imports-only-wire-types',
      comment:
        "The SDK (packages/sdk) ships to browsers: it imports nothing of the server's code, only the shared wire types (packages/wire).",
      severity: 'error',
      from: { path: '^packages/sdk/' },
      to: { path: '^src/' },
    },
    {
      name: 'wire-types-import-no-code',
      comment:
        'packages/wire is the contract both sides share: schemas and their types only, importing neither the server nor the SDK.',
      severity: 'error',
      from: { path: '^packages/wire/' },
      to: { path: '^(src|packages/sdk)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
  },
};
