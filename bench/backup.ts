/**
 * What backing up a live SQLite database does to a server under a few writes a second (README "Backups"):
 * `node bench/backup.ts [cli,vacuum,step100]` fills a fresh database with FILLER_MB (200) MiB, starts
 * `tollgate serve` on it, grants credits one after the other (~10 a second), and for each method, in its own
 * process as a second connection, reports its duration and the credit calls' latency while it ran:
 * `cli` is `tollgate backup` (node:sqlite backup() in one step, integrity check, fsync), `vacuum` is `VACUUM
 * INTO`, `step100` is backup() in Node's default steps of 100 pages (given up after 60 s).
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { serveAddress } from '../src/testing/harness.ts';

const root = new URL('..', import.meta.url).pathname;
const fillerMb = Number(process.env.FILLER_MB ?? 200);
const methods = (process.argv[2] ?? 'cli,vacuum,step100').split(',');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-bkm-'));
const token = 'tga_measure_0123456789abcdefghijklmnop';
const env = { ...process.env, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn', TOLLGATE_ADMIN_TOKEN: token };
execFileSync(process.execPath, ['src/cli.ts', 'migrate'], { cwd: root, env });
{
  const db = new DatabaseSync(join(dir, 'data/tollgate.db'));
  db.exec('CREATE TABLE zz_filler (id INTEGER PRIMARY KEY, body BLOB)');
  const insert = db.prepare('INSERT INTO zz_filler (body) VALUES (randomblob(4000))');
  db.exec('BEGIN');
  for (let i = 0; i < fillerMb * 256; i++) insert.run();
  db.exec('COMMIT');
  db.close();
}
console.log('database', (statSync(join(dir, 'data/tollgate.db')).size / 2 ** 20).toFixed(0), 'MiB');
const child = spawn(process.execPath, ['src/cli.ts', 'serve'], {
  cwd: root,
  env: { ...env, PORT: '0', LOG_LEVEL: 'info', SWEEP_INTERVAL_SECONDS: '0' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const { baseUrl } = await serveAddress(child);
const admin = (method: string, path: string, body?: unknown) =>
  fetch(baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
const user = (await (
  await admin('POST', '/api/admin/users', { email: 'm@example.com', password: 'a-long-password' })
).json()) as any;
const samples: { at: number; ms: number }[] = [];
let running = true;
const load = (async () => {
  while (running) {
    const t = performance.now();
    const r = await admin('POST', `/api/admin/users/${user.id}/credits`, { amount: 1, reason: 'load' });
    await r.text();
    samples.push({ at: t, ms: performance.now() - t });
    await new Promise((r) => setTimeout(r, 100)); // ~10 writes a second
  }
})();
const pct = (xs: number[], p: number): number =>
  xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const stats = (xs: number[]) =>
  `n=${xs.length} p50=${pct(xs, 0.5).toFixed(1)} p99=${pct(xs, 0.99).toFixed(1)} max=${Math.max(...xs).toFixed(1)} ms`;
await new Promise((r) => setTimeout(r, 3000));
const scripts: Record<string, string[]> = {
  cli: ['src/cli.ts', 'backup', '--to'],
  vacuum: [
    '-e',
    `const {DatabaseSync}=require('node:sqlite');const d=new DatabaseSync(process.env.DATA_DIR+'/tollgate.db');d.exec('PRAGMA busy_timeout=10000');d.prepare('VACUUM INTO ?').run(process.argv[1]);`,
  ],
  step100: [
    '-e',
    `const {DatabaseSync,backup}=require('node:sqlite');const d=new DatabaseSync(process.env.DATA_DIR+'/tollgate.db');let s=0,last=Infinity,restarts=0;const t=setTimeout(()=>{console.log('gave up after 60 s; restarts',restarts);process.exit(3)},60000);backup(d,process.argv[1],{progress:({remainingPages})=>{if(remainingPages>last)restarts++;last=remainingPages}}).then(()=>{clearTimeout(t);console.log('restarts',restarts)})`,
  ],
};
const baseline = samples.map((s) => s.ms);
console.log('baseline        ', stats([...baseline]));
for (const method of methods) {
  const to = join(dir, `copy-${method}-${Math.random().toString(36).slice(2)}.db`);
  const start = performance.now();
  const out = await new Promise<string>((resolve) => {
    const c = spawn(process.execPath, [...scripts[method]!, to], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let o = '';
    c.stdout.on('data', (d) => (o += d));
    c.on('exit', (code) => resolve(`${o.trim().replace(/\s+/g, ' ').slice(0, 120)} exit ${code}`));
  });
  const end = performance.now();
  const during = samples.filter((s) => s.at >= start && s.at <= end).map((s) => s.ms);
  console.log(
    `${method.padEnd(8)} took ${(end - start).toFixed(0)} ms; during it: ${stats(during)}; ${method === 'cli' ? '' : out}`,
  );
  await new Promise((r) => setTimeout(r, 2000));
}
running = false;
await load;
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
rmSync(dir, { recursive: true, force: true });
