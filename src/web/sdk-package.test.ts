import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureWebBuilt } from './browser.ts';
import { REPO_ROOT } from './static.ts';

/**
 * `@tollgate/sdk` and `@tollgate/wire` as an app developer installs them: `npm pack`ed, unpacked into an app's
 * node_modules outside the repository, then type-checked by `tsc` under the app's own options (no skipLibCheck)
 * and imported by Node. The app is the README's "The client SDK" example, as written, and every other export
 * the README names.
 */

const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');

let app = '';
const packed: Record<string, string[]> = {};

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' });
  assert.equal(result.status, 0, `${command} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

before(() => {
  ensureWebBuilt();
  app = mkdtempSync(join(tmpdir(), 'tollgate-sdk-app-'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  for (const name of ['wire', 'sdk']) {
    // --ignore-scripts: the prepack build already ran (ensureWebBuilt); the test reads what `npm pack` takes.
    const [report] = JSON.parse(
      run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', app], join(REPO_ROOT, 'packages', name)),
    ) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packed[name] = report!.files.map((file) => file.path).sort();
    const folder = join(app, 'node_modules/@tollgate', name);
    mkdirSync(folder, { recursive: true });
    run('tar', ['-xzf', join(app, report!.filename), '-C', folder, '--strip-components=1'], app);
  }
  // What npm would install beside them: the wire types' TypeBox, and the React types a React app has.
  mkdirSync(join(app, 'node_modules/@types'), { recursive: true });
  symlinkSync(join(REPO_ROOT, 'node_modules/typebox'), join(app, 'node_modules/typebox'));
  symlinkSync(join(REPO_ROOT, 'node_modules/@types/react'), join(app, 'node_modules/@types/react'));
  symlinkSync(join(REPO_ROOT, 'node_modules/csstype'), join(app, 'node_modules/csstype'));
});
after(() => app && rmSync(app, { recursive: true, force: true }));

/** The README's example of "The client SDK", as written. */
function readmeExample(): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### The client SDK'));
  return /```ts\n([\s\S]*?)```/.exec(section)![1]!;
}

const EVERY_EXPORT = `
import {
  createTollgateClient, defineTollgateElements, memoryStorage, TollgateRestrictionError,
  type RestrictionDialogElement, type TollgateUser, type TollgateBalance, type AuthorizedApp,
} from '@tollgate/sdk';
import type { SpendingLimitRefusal } from '@tollgate/wire';

const tollgate = createTollgateClient({
  baseUrl: 'https://tollgate.example.com',
  clientId: 'app_x',
  redirectUri: 'https://myapp.example.com/callback',
  scopes: ['read', 'billing:read', 'ai:chat', 'offline_access'],
  storage: memoryStorage(),
});

export async function main(): Promise<void> {
  await tollgate.handleRedirect();
  if (!tollgate.isSignedIn()) await tollgate.signIn();
  try {
    const reply = await tollgate.chat({ model: 'tollgate/echo', messages: [{ role: 'user', content: 'Hi' }] });
    console.log(reply.choices[0]?.message.content);
    for await (const delta of tollgate.chatStream({ model: 'tollgate/echo', messages: [{ role: 'user', content: 'Hi' }] })) {
      console.log(delta.length);
    }
    const user: TollgateUser = await tollgate.getUser();
    const balance: TollgateBalance = await tollgate.getBalance();
    const apps: AuthorizedApp[] = await tollgate.getAuthorizedApps();
    console.log(user.email, balance.available, apps[0]?.limits.daily?.resetsAt);
    await tollgate.signOut();
  } catch (error) {
    if (!(error instanceof TollgateRestrictionError)) throw error;
    const restriction = error.restriction;
    switch (restriction.kind) {
      case 'spending_limit': {
        const refusal: SpendingLimitRefusal = restriction;
        console.log(refusal.limitType, restriction.limit - restriction.current, restriction.resetsAt);
        break;
      }
      case 'insufficient_credits':
        console.log(restriction.available - restriction.required);
        break;
      case 'other':
        console.log(restriction.code);
        break;
      default: {
        const unreachable: never = restriction;
        throw unreachable;
      }
    }
    defineTollgateElements();
    const dialog = document.querySelector('tollgate-restriction-dialog') as RestrictionDialogElement;
    Object.assign(dialog, { appId: tollgate.clientId, gatewayUrl: tollgate.baseUrl, getToken: () => tollgate.getAccessToken() });
    dialog.error = error;
  }
}
`;

const REACT_APP = `
import { useState } from 'react';
import { RestrictionDialog, SignInDialog } from '@tollgate/sdk/react';
import { createTollgateClient, type TollgateRestrictionError } from '@tollgate/sdk';

const tollgate = createTollgateClient({ baseUrl: 'https://g.example', clientId: 'app_x', redirectUri: 'https://a.example/', scopes: ['ai:chat'] });

export function App() {
  const [error, setError] = useState<TollgateRestrictionError | null>(null);
  const [open, setOpen] = useState(false);
  return (
    <div>
      <SignInDialog client={tollgate} appName="My app" open={open} onClose={() => setOpen(false)} />
      <RestrictionDialog error={error} appId={tollgate.clientId} gatewayUrl={tollgate.baseUrl}
        getToken={() => tollgate.getAccessToken()} onRetry={() => setError(null)} onClose={() => setError(null)} />
    </div>
  );
}
`;

describe('the SDK and wire packages as an app installs them', () => {
  for (const [name, options] of [
    ['moduleResolution bundler', { module: 'esnext', moduleResolution: 'bundler' }],
    ['moduleResolution nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
    [
      'nodenext with the strictest options',
      {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        noPropertyAccessFromIndexSignature: true,
        noImplicitOverride: true,
        verbatimModuleSyntax: true,
        erasableSyntaxOnly: true,
        allowImportingTsExtensions: true,
      },
    ],
  ] as const) {
    it(`an app's strict tsc without skipLibCheck accepts the README's usage and the React entry (${name})`, () => {
      const folder = join(app, name.replace(/\W+/g, '-'));
      mkdirSync(folder);
      writeFileSync(join(folder, 'every-export.ts'), EVERY_EXPORT);
      // The README's example indexes `choices[0]` as most apps do, which noUncheckedIndexedAccess refuses in any app.
      if (!('noUncheckedIndexedAccess' in options)) writeFileSync(join(folder, 'readme.ts'), readmeExample());
      writeFileSync(join(folder, 'react-app.tsx'), REACT_APP);
      writeFileSync(
        join(folder, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'es2022',
            lib: ['es2022', 'dom', 'dom.iterable'],
            strict: true,
            noEmit: true,
            jsx: 'react-jsx',
            types: [],
            ...options,
          },
          include: ['*.ts', '*.tsx'],
        }),
      );
      const result = spawnSync(process.execPath, [TSC, '-p', folder], { cwd: app, encoding: 'utf8' });
      assert.equal(result.status, 0, result.stdout + result.stderr);
    });
  }

  it('ships built JavaScript and declarations, a README, the licence it names, and no sources', () => {
    for (const [name, files] of Object.entries(packed)) {
      assert.ok(files.includes('README.md'), `${name} has no README for its registry page`);
      // MIT asks that its text travel with every copy: the package.json's "license" alone does not carry it.
      assert.ok(files.includes('LICENSE'), `${name} says MIT but ships no licence text`);
      assert.deepEqual(
        files.filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts')),
        [],
        `${name} ships TypeScript sources`,
      );
      const manifest = JSON.parse(readFileSync(join(app, 'node_modules/@tollgate', name, 'package.json'), 'utf8'));
      // TypeScript's moduleResolution node10 (`node`, still in many apps' tsconfig) reads no `exports`, only this.
      assert.ok(files.includes(String(manifest.types).replace(/^\.\//, '')), `${name}: no top-level types`);
      for (const [entry, conditions] of Object.entries(manifest.exports as Record<string, Record<string, string>>)) {
        assert.equal(Object.keys(conditions)[0], 'types', `${name} ${entry}: types first`);
        for (const target of Object.values(conditions))
          assert.ok(files.includes(target.replace(/^\.\//, '')), `${name} ${entry}: ${target} is not in the package`);
      }
    }
  });

  it("the React entry opens with 'use client' (Next.js App Router server components may import it); the client has none", () => {
    const sdk = join(app, 'node_modules/@tollgate/sdk');
    const manifest = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8'));
    const shipped = (entry: string) => readFileSync(join(sdk, manifest.exports[entry].import), 'utf8');
    // A directive counts only as the module's first statement: comments may precede it, code may not.
    const firstStatement = (code: string) => code.replace(/^(\s|\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)*/, '').split(/;|\n/)[0];
    assert.match(firstStatement(shipped('./react'))!, /^(['"])use client\1$/);
    // The plain client is universal: a server component or a Node script must be able to use it as server code.
    assert.doesNotMatch(shipped('.'), /['"]use client['"]/);
  });

  it("Node imports both packages from an app's node_modules and builds a sign-in with the storage passed in", () => {
    const script = `
      import { BalanceSchema } from '@tollgate/wire';
      import { createTollgateClient, memoryStorage } from '@tollgate/sdk';
      const client = createTollgateClient({ baseUrl: 'http://127.0.0.1:9', clientId: 'app_x', redirectUri: 'http://127.0.0.1:9/', scopes: ['ai:chat'], storage: memoryStorage() });
      const request = await client.createAuthorizationRequest();
      console.log(JSON.stringify({ schema: BalanceSchema.type, url: new URL(request.url).pathname, signedIn: client.isSignedIn() }));
    `;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { schema: 'object', url: '/api/oauth/authorize', signedIn: false });
  });
});
