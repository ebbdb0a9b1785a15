import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describeEachDatabase, request, startServeProcess } from '../testing/harness.ts';
import {
  PROJECT_DIR,
  SERVER_BUNDLE_DIR,
  SERVER_BUNDLE_ENTRY,
  SERVER_BUNDLE_STAMP,
  serverBundleState,
  sourceDigest,
} from './server-bundle.ts';

describe('the server bundle is run only when built from the sources on disk', () => {
  let project: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  };
  const stamp = (digest: string) =>
    write(`${SERVER_BUNDLE_DIR}/${SERVER_BUNDLE_STAMP}`, JSON.stringify({ digest, builtAt: new Date().toISOString() }));

  before(() => {
    project = mkdtempSync(join(tmpdir(), 'tollgate-bundle-'));
    write('src/cli.ts', 'export {};\n');
    write('src/billing/meter.ts', 'export const a = 1;\n');
    write('src/billing/meter.test.ts', 'it();\n');
    write('package-lock.json', '{"lockfileVersion":3}\n');
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  it('the digest changes with a source file, a new source file or the lock file, and not with a test file', () => {
    const base = sourceDigest(project);
    assert.equal(sourceDigest(project), base, 'the same files give the same digest');
    write('src/billing/meter.test.ts', 'it(); it();\n');
    assert.equal(sourceDigest(project), base, 'tests are not in the bundle');
    write('src/billing/meter.ts', 'export const a = 2;\n');
    const edited = sourceDigest(project);
    assert.notEqual(edited, base);
    write('src/billing/limits.ts', 'export {};\n');
    const added = sourceDigest(project);
    assert.notEqual(added, edited);
    write('package-lock.json', '{"lockfileVersion":3,"packages":{}}\n');
    assert.notEqual(sourceDigest(project), added, 'another version of a package is another bundle');
  });

  it('no bundle, a bundle of other sources and a bundle of these sources are told apart', () => {
    assert.deepEqual(serverBundleState(project), { state: 'absent' });
    stamp(sourceDigest(project));
    assert.deepEqual(serverBundleState(project), { state: 'absent' }, 'a stamp without its entry is no bundle');
    write(`${SERVER_BUNDLE_DIR}/${SERVER_BUNDLE_ENTRY}`, '');
    assert.deepEqual(serverBundleState(project), {
      state: 'fresh',
      entry: join(project, SERVER_BUNDLE_DIR, SERVER_BUNDLE_ENTRY),
    });
    write('src/billing/meter.ts', 'export const a = 3;\n');
    assert.equal(serverBundleState(project).state, 'stale');
    write(`${SERVER_BUNDLE_DIR}/${SERVER_BUNDLE_STAMP}`, 'not json');
    assert.deepEqual(serverBundleState(project), { state: 'absent' });
  });
});

/**
 * Builds the bundle unless it is fresh: `npm test` builds it first (pretest); a test file run on its own after
 * an edit builds it here.
 */
function ensureBundleBuilt(): void {
  if (serverBundleState().state === 'fresh') return;
  const build = spawnSync(process.execPath, ['scripts/build-server.ts'], { cwd: PROJECT_DIR, encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr);
}

describe('the server bundle is written in ASCII', () => {
  it('no chunk holds a non-ASCII character, so V8 keeps each source at one byte per character', () => {
    ensureBundleBuilt();
    const dir = join(PROJECT_DIR, SERVER_BUNDLE_DIR);
    const chunks = readdirSync(dir).filter((name) => name.endsWith('.js'));
    assert.ok(chunks.length > 1, chunks.join(' '));
    for (const chunk of chunks) {
      const code = readFileSync(join(dir, chunk), 'utf8');
      const at = code.search(/[^\x00-\x7f]/);
      assert.equal(at, -1, `${chunk}: ${JSON.stringify(code.slice(Math.max(0, at - 40), at + 10))}`);
    }
  });
});

describe("the service leaves Node's own copy of undici unloaded", () => {
  it('importing the whole service (what serve runs) loads no internal undici module', () => {
    // A value import from 'node:http' builds an ES module facade that reads node:http's WebSocket getters, and
    // they load Node's bundled undici: ~5 MB resident that the gateway never uses (it calls upstreams with the
    // npm undici). events/send.ts and platform/http/server.ts take node:http through process.getBuiltinModule.
    const probe = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `await import(${JSON.stringify(join(PROJECT_DIR, 'src/service.ts'))});
         console.log(JSON.stringify(process.moduleLoadList.filter((name) => /undici/.test(name))));`,
      ],
      { cwd: PROJECT_DIR, encoding: 'utf8' },
    );
    assert.equal(probe.status, 0, probe.stderr);
    assert.deepEqual(JSON.parse(probe.stdout.trim().split('\n').at(-1)!), []);
  });
});

describe('the service leaves ICU untouched', () => {
  it('starting the service and answering a chat, a stream and a Messages call format nothing through Intl', () => {
    // The first toLocaleString or Intl call of a process maps ~5 MiB of the node binary's ICU data (docs/scaling.md,
    // twenty-fourth pass); the server's few grouped numbers use groupThousands (platform/money.ts) instead.
    const tracer = `
      const uses = (globalThis.__intlUses = []);
      const note = (name) => uses.push(name + ' ' + new Error().stack.split('\\n').slice(3, 5).join(' | ').trim());
      const wrap = (proto, names) => { for (const name of names) { const original = proto[name];
        proto[name] = function (...args) { note(name); return original.apply(this, args); }; } };
      wrap(Number.prototype, ['toLocaleString']); wrap(BigInt.prototype, ['toLocaleString']);
      wrap(Date.prototype, ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']);
      wrap(String.prototype, ['localeCompare', 'toLocaleLowerCase', 'toLocaleUpperCase']);
      wrap(Array.prototype, ['toLocaleString']);
      for (const name of Object.getOwnPropertyNames(Intl)) { const original = Intl[name];
        if (typeof original === 'function') Intl[name] = new Proxy(original, {
          construct: (target, args) => (note('Intl.' + name), Reflect.construct(target, args)),
          apply: (target, self, args) => (note('Intl.' + name), Reflect.apply(target, self, args)) }); }`;
    const probe = spawnSync(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent(tracer)}`,
        '--input-type=module',
        '-e',
        `const { TestEnv } = await import(${JSON.stringify(join(PROJECT_DIR, 'src/testing/harness.ts'))});
         const env = new TestEnv('sqlite');
         await env.start();
         try {
           const session = await env.createUser();
           await env.admin('POST', '/api/admin/users/' + session.userId + '/credits', { amount: 5 });
           const { key } = (await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'icu', permissions: ['ai:chat'] })).body.apiKey;
           const ask = (path, body) => env.request('POST', path, { token: key, body });
           const answers = [
             await ask('/api/v1/chat/completions', { model: 'tollgate/echo', messages: [{ role: 'user', content: 'Hello' }] }),
             await ask('/api/v1/chat/completions', { model: 'tollgate/echo', stream: true, messages: [{ role: 'user', content: 'Hello' }] }),
             await ask('/api/v1/messages', { model: 'tollgate/echo', max_tokens: 16, messages: [{ role: 'user', content: 'Hello' }] }),
           ];
           console.log(JSON.stringify({ statuses: answers.map((a) => a.status), uses: globalThis.__intlUses }));
         } finally { await env.stop(); }`,
      ],
      { cwd: PROJECT_DIR, encoding: 'utf8' },
    );
    assert.equal(probe.status, 0, probe.stderr);
    const { statuses, uses } = JSON.parse(probe.stdout.trim().split('\n').at(-1)!);
    assert.deepEqual(statuses, [200, 200, 200]);
    assert.deepEqual(uses, []);
  });
});

describeEachDatabase('serve runs the server bundle built by npm run build', (env) => {
  let served: Awaited<ReturnType<typeof startServeProcess>>;
  before(async () => {
    ensureBundleBuilt();
    served = await startServeProcess(env);
  });
  after(() => served?.stop());

  it(
    'says so when it starts, and serves the same API document as the sources',
    { skip: process.platform !== 'linux' },
    async () => {
      assert.match(served.output(), /"code":"bundle","msg":"Tollgate listening/);
      // The same process (pid), re-executed once: serve's runtime settings, the bundle's entry, no stripper.
      const cmdline = readFileSync(`/proc/${served.child.pid}/cmdline`, 'utf8').split('\0');
      assert.ok(cmdline.includes(join(PROJECT_DIR, SERVER_BUNDLE_DIR, SERVER_BUNDLE_ENTRY)), cmdline.join(' '));
      assert.ok(cmdline.includes('--max-semi-space-size=8'), cmdline.join(' '));
      const fromBundle = (await request(served.baseUrl, 'GET', '/api/openapi.json')).body;
      const fromSources = (await env.request('GET', '/api/openapi.json')).body;
      assert.deepEqual({ ...fromBundle, servers: [] }, { ...fromSources, servers: [] });
    },
  );

  it('bills a chat from a key, and the ledger still balances', async () => {
    const session = await env.createUser();
    assert.equal((await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 5 })).status, 200);
    const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'bundle',
      permissions: ['ai:chat'],
    });
    assert.equal(created.status, 200, created.text);
    const chat = await request(served.baseUrl, 'POST', '/api/v1/chat/completions', {
      token: created.body.apiKey.key,
      body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'from the bundle' }] },
    });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.body.choices[0].message.content, 'from the bundle');
    const balance = (await env.dashboard(session, 'GET', '/api/wallet/balance')).body.balance;
    assert.ok(balance > 0 && balance < 5, `charged: ${balance}`);
    const verify = await request(served.baseUrl, 'GET', '/api/admin/ledger/verify', { token: env.adminToken });
    assert.equal(verify.body.ok, true, verify.text);
  });
});
