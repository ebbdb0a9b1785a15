import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkImportRules } from '../scripts/import-rules.ts';

describe('import rules (.dependency-cruiser.cjs, docs/architecture.md)', () => {
  it('the tree breaks none of them', () => {
    const report = checkImportRules();
    // The check saw the whole tree (a skeleton that lost its modules would pass vacuously).
    assert.ok(report.modules > 300, `only ${report.modules} modules were checked`);
    assert.deepEqual(report.violations, []);
  });

  it('each rule fails on a planted violation', () => {
    const report = checkImportRules(undefined, {
      'src/platform/planted-domain.ts':
        "import type { Billing } from '../billing/service.ts';\nexport type X = Billing;\n",
      'src/keys/planted-a.ts': "import { b } from './planted-b.ts';\nexport const a = () => b;\n",
      'src/keys/planted-b.ts': "import type { a } from './planted-a.ts';\nexport const b = 1 as unknown as typeof a;\n",
      'src/gateway/planted-tables.ts':
        "import type { WalletsTable } from '../billing/schema.ts';\nexport type W = WalletsTable;\n",
      'src/models/planted-root.ts': "export const load = () => import('../service.ts');\n",
      'packages/wire/src/planted-code.ts':
        "import { microsToCredits } from '../../../src/platform/money.ts';\nexport { microsToCredits };\n",
      'packages/sdk/src/planted-server.ts':
        "import { ApiError } from '../../../src/platform/errors.ts';\nexport { ApiError };\n",
    });
    const broken = (rule: string) => report.violations.filter((v) => v.rule === rule).map((v) => `${v.from} → ${v.to}`);
    assert.deepEqual(broken('platform-imports-no-feature'), [
      'src/platform/planted-domain.ts → src/billing/service.ts',
    ]);
    assert.ok(broken('no-circular').includes('src/keys/planted-a.ts → src/keys/planted-b.ts'), 'the cycle is found');
    assert.deepEqual(broken('no-other-feature-tables'), ['src/gateway/planted-tables.ts → src/billing/schema.ts']);
    assert.deepEqual(broken('features-do-not-import-the-composition-root'), [
      'src/models/planted-root.ts → src/service.ts',
    ]);
    assert.deepEqual(broken('sdk-imports-only-wire-types'), [
      'packages/sdk/src/planted-server.ts → src/platform/errors.ts',
    ]);
    assert.deepEqual(broken('wire-types-import-no-code'), [
      'packages/wire/src/planted-code.ts → src/platform/money.ts',
    ]);
  });
});
