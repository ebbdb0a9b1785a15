import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Db } from './platform/db/connect.ts';
import { asDb } from './platform/db/own-tables.ts';
import { billingDb } from './billing/schema.ts';
import { keysDb } from './keys/schema.ts';
import { oauthDb } from './oauth/schema.ts';
import { accountsDb } from './accounts/schema.ts';

/**
 * Never called: `tsc` (the first step of `npm test`) compiles it, and each `@ts-expect-error` fails the
 * build unless the line under it is a type error. So these are proofs that a feature's view of the database
 * cannot reach another feature's table, and the shared connection reaches none.
 */
export function crossFeatureQueriesDoNotCompile(db: Db): void {
  // @ts-expect-error billing's view has no `users` (accounts' table)
  billingDb(db).selectFrom('users');
  // @ts-expect-error keys' view has no `authorized_apps` (oauth's table)
  keysDb(db).selectFrom('authorized_apps').selectAll();
  // @ts-expect-error oauth's view cannot write billing's `spending_limits`
  oauthDb(db).insertInto('spending_limits');
  // @ts-expect-error nor join another feature's table into its own query
  keysDb(db).selectFrom('api_keys').innerJoin('users', 'users.id', 'api_keys.user_id');
  // @ts-expect-error the shared connection names no table at all
  db.selectFrom('wallets');

  void keysDb(db)
    .transaction()
    .execute(async (trx) => {
      // @ts-expect-error a feature's transaction is not another feature's view…
      billingDb(trx);
      // …until it is handed over as the shared `Db`, which the owner then views with its own tables.
      await billingDb(asDb(trx)).selectFrom('spending_limits').select('amount').execute();
    });

  // Each view reaches its own tables.
  void accountsDb(db).selectFrom('users').select('email');
  void billingDb(db).selectFrom('wallets').select('balance');
}

const SRC = new URL('.', import.meta.url).pathname;

/** Every TypeScript file under src/, as a path relative to it. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** Tests and test tooling may read the whole database; features may not. */
function isTooling(file: string): boolean {
  return (
    file.endsWith('.test.ts') ||
    file.startsWith('testing/') ||
    file.startsWith('chaos/') ||
    /\/testing(\/|\.ts$)/.test(file)
  );
}

/** Each feature's view function, by the folder of the feature that owns the tables. */
const VIEWS: Record<string, string> = {
  accountsDb: 'accounts/',
  billingDb: 'billing/',
  eventsDb: 'events/',
  keysDb: 'keys/',
  modelsDb: 'models/',
  oauthDb: 'oauth/',
  predictionsDb: 'predictions/',
  topupsDb: 'topups/',
  webhooksDb: 'webhooks/',
  responsesDb: 'protocols/openai-responses/',
};

it("a feature views the database only with its own tables: no code calls another feature's view or the whole-database handle", () => {
  const offenders: string[] = [];
  for (const file of sources()) {
    if (isTooling(file)) continue;
    const text = readFileSync(join(SRC, file), 'utf8');
    for (const [view, owner] of Object.entries(VIEWS))
      if (!file.startsWith(owner) && new RegExp(`\\b${view}\\(`).test(text)) offenders.push(`${file}: ${view}`);
    if (/all-tables\.ts'|\ballTables\(/.test(text)) offenders.push(`${file}: the whole database`);
  }
  assert.deepEqual(offenders, []);
});

it('the platform knows no feature: its database code imports nothing outside src/platform', () => {
  const offenders: string[] = [];
  for (const file of sources()) {
    if (!file.startsWith('platform/db/') || isTooling(file)) continue;
    for (const [, target] of readFileSync(join(SRC, file), 'utf8').matchAll(/from '(\.[^']+)'/g)) {
      if (relative(SRC, join(SRC, file, '..', target)).startsWith('platform/')) continue;
      offenders.push(`${file} imports ${target}`);
    }
  }
  assert.deepEqual(offenders, []);
});
