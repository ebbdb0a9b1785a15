import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import type { PlatformConfig } from '../config.ts';
import { secretsFilePath } from '../secrets.ts';
import { DatabaseInUseError, takeSoleUse } from './sqlite-repack.ts';

/**
 * Backups an operator can rely on (README "Backups"): `tollgate backup` and `tollgate restore`.
 *
 * What a restore needs is two things: the database, and the key file (`SECRETS_FILE`, on SQLite
 * `DATA_DIR/secrets.json`) whose `ENCRYPTION_KEY` opens the API keys and OAuth signing keys sealed in it. A
 * backup `<path>` is therefore the database and, beside it, `<path>.secrets.json`, a copy of the key file;
 * secrets set in the environment are in neither, and the report names them.
 *
 * Every file is written the same way: under a temporary name in the target's folder, mode 0600 from its
 * creation (it holds password and key hashes, the ledger, the key file), synced, then given its name, which
 * refuses an existing file unless `force`; then the folder is synced. A crash leaves the previous backup or
 * none, never a torn one under the name.
 */

/** Suffix of the key file's copy beside a backup. */
export const SECRETS_SUFFIX = '.secrets.json';

/** The three secrets a key file may hold, as their variables. */
const SECRET_VARIABLES = ['ENCRYPTION_KEY', 'COOKIE_SECRET', 'TOLLGATE_ADMIN_TOKEN'] as const;

/** The backup (or its key file) exists and `--force` was not given: nothing was written. */
export class BackupExistsError extends Error {
  constructor(files: string[]) {
    super(
      `${files.join(' and ')} already exist${files.length === 1 ? 's' : ''}: pass --force to replace, or choose another path. Nothing was written.`,
    );
    this.name = 'BackupExistsError';
  }
}

export interface BackupReport {
  /** The database copy: SQLite file, or PostgreSQL custom-format dump (`pg_restore` reads it). */
  file: string;
  kind: 'sqlite' | 'postgres-dump';
  bytes: number;
  /** Wall time of the copy itself (the snapshot is the moment it began). */
  ms: number;
  /** The key file's copy, or null when there is no key file (every secret set in the environment, or kept in the database). */
  secretsFile: string | null;
  /** Secrets set in the environment or `TOLLGATE_CONFIG`: in neither file; keep them with this backup. */
  secretsNotInBackup: string[];
  /** What to do with the files, in one sentence. */
  note: string;
}

/** A temporary name beside `target`, in its folder (so that the final rename stays on one file system). */
function temporaryName(target: string): string {
  return join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Creates `file` empty, mode 0600 whatever the umask, refusing an existing one. */
function createPrivate(file: string): void {
  closeSync(openSync(file, 'wx', 0o600));
  chmodSync(file, 0o600);
}

function fsyncFile(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Syncs a folder, so that a rename in it survives a crash; some systems cannot, and the files are synced. */
function fsyncFolder(folder: string): void {
  try {
    const fd = openSync(folder, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {}
}

/** Gives a finished temporary file its name: refuses an existing one unless `force` (link is atomic and never replaces). */
function place(temporary: string, target: string, force: boolean): void {
  if (force) {
    renameSync(temporary, target);
    return;
  }
  try {
    linkSync(temporary, target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new BackupExistsError([target]);
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Refuses a backup path that is one of the files the service runs on: the SQLite database (its `-wal`, `-shm`
 * and `-journal` too) or the key file. Why: told that such a path "already exists: pass --force", an operator
 * who named the data folder by mistake would pass it, and the copy would be renamed over the live file: the
 * server goes on writing into the replaced file and loses it when it stops, and its next start finds a
 * snapshot beside a `-wal` that is not its own (which corrupts it) or no key file at all.
 */
function refuseLiveFiles(
  config: Pick<PlatformConfig, 'DATABASE_URL' | 'DATA_DIR'>,
  keyFile: string | undefined,
  targets: Array<string | null>,
): void {
  const database = config.DATABASE_URL ? null : resolve(config.DATA_DIR, 'tollgate.db');
  const live: Array<[string, string]> = [
    ...(database
      ? ['', '-wal', '-shm', '-journal'].map((suffix): [string, string] => [
          database + suffix,
          'the database the server uses',
        ])
      : []),
    ...(keyFile ? [[keyFile, 'the key file (SECRETS_FILE) the server uses'] as [string, string]] : []),
  ];
  for (const target of targets) {
    if (target === null) continue;
    const hit = live.find(([file]) => sameFile(target, file));
    if (hit)
      throw new Error(
        `${target} is ${hit[1]}: a backup must go elsewhere (outside DATA_DIR), even with --force. Nothing was written.`,
      );
  }
}

/** The same path, or two names of one existing file (a folder reached through a symbolic link, a hard link). */
function sameFile(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

function removeSqliteFiles(file: string): void {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}

/**
 * Copies the live SQLite database `source` to `temporary` (already created, 0600) while a server keeps
 * writing to it: SQLite's online backup in a single step, i.e. one read transaction over the whole file. In
 * WAL mode a reader never blocks the server's writes, and the copy is the database as it was when the step
 * began. Why one step: in smaller steps (Node's default, 100 pages), every commit of another connection (the
 * server) between two steps restarts the copy from the first page; at a few writes a second a large database
 * was never done (README "Backups" gives the measurements). The copy is then checked
 * (`PRAGMA integrity_check`) and left in rollback-journal mode, so that it is one self-contained file.
 */
export async function copySqlite(source: string, temporary: string): Promise<{ pages: number }> {
  const database = new DatabaseSync(source);
  let pages: number;
  try {
    database.exec('PRAGMA busy_timeout = 10000');
    pages = await backup(database, temporary, { rate: 0x7fffffff });
  } finally {
    database.close();
  }
  const copy = new DatabaseSync(temporary);
  try {
    const problems = copy.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
    if (problems.length !== 1 || problems[0]!.integrity_check !== 'ok')
      throw new Error(
        `the copy of ${source} fails SQLite's integrity check: ${problems
          .slice(0, 5)
          .map((p) => p.integrity_check)
          .join('; ')}`,
      );
    copy.exec('PRAGMA journal_mode = DELETE');
  } finally {
    copy.close();
  }
  return { pages };
}

/**
 * Dumps the PostgreSQL schema `DATABASE_SCHEMA` with `pg_dump` (custom format, one consistent snapshot, the
 * server keeps serving) into `temporary`, through this process's file descriptor so the file keeps mode
 * 0600. The password of `DATABASE_URL` (in its user part or its query string) goes to `pg_dump` in `PGPASSWORD`,
 * not on its command line (which other users of the machine can read).
 */
export async function dumpPostgres(
  config: Pick<PlatformConfig, 'DATABASE_URL' | 'DATABASE_SCHEMA'>,
  temporary: string,
  pgDump = 'pg_dump',
): Promise<void> {
  const url = new URL(config.DATABASE_URL!);
  // libpq and node-postgres also read a `password` in the query string (the server's connection prefers it).
  const password = url.searchParams.get('password') ?? decodeURIComponent(url.password);
  url.password = '';
  url.searchParams.delete('password');
  const args = ['--format=custom', `--schema=${config.DATABASE_SCHEMA}`, `--dbname=${url.href}`];
  const fd = openSync(temporary, 'r+');
  try {
    const stderr = await new Promise<string>((resolvePromise, reject) => {
      const child = spawn(pgDump, args, {
        stdio: ['ignore', fd, 'pipe'],
        env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) },
      });
      let errors = '';
      child.stderr!.on('data', (chunk) => (errors += chunk));
      child.on('error', (error) =>
        reject(
          (error as NodeJS.ErrnoException).code === 'ENOENT'
            ? new Error(
                `${pgDump} was not found (Debian: apt-get install postgresql-client, of the server's major version or later). ` +
                  `The command to run yourself: PGPASSWORD=… pg_dump ${args.map((a) => `'${a}'`).join(' ')} > <file>; keep the key file (SECRETS_FILE) with it.`,
              )
            : error,
        ),
      );
      child.on('exit', (code, signal) =>
        code === 0
          ? resolvePromise(errors)
          : reject(new Error(`pg_dump failed (${signal ?? `exit ${code}`}): ${errors.trim() || 'no message'}`)),
      );
    });
    if (stderr.trim()) process.stderr.write(stderr);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `tollgate backup --to <path>`: the database (SQLite: an online copy; PostgreSQL: `pg_dump` of the schema)
 * at `<path>`, and the key file at `<path>.secrets.json`. Refuses existing files unless `force`.
 */
export async function backupDatabase(
  config: Pick<PlatformConfig, 'DATABASE_URL' | 'DATABASE_SCHEMA' | 'DATA_DIR' | 'SECRETS_FILE'> &
    Partial<Record<(typeof SECRET_VARIABLES)[number], string>>,
  to: string,
  options: { force?: boolean; pgDump?: string } = {},
): Promise<BackupReport> {
  const force = options.force ?? false;
  const target = resolve(to);
  const keyFile = secretsFilePath(config);
  const keyFileExists = keyFile !== undefined && existsSync(keyFile);
  const secretsTarget = keyFileExists ? target + SECRETS_SUFFIX : null;
  refuseLiveFiles(config, keyFile, [target, secretsTarget]);
  if (!existsSync(dirname(target))) throw new Error(`${dirname(target)} does not exist: create the folder first`);
  if (!force) {
    const present = [target, secretsTarget].filter((file): file is string => file !== null && existsSync(file));
    if (present.length > 0) throw new BackupExistsError(present);
  }
  const temporary = temporaryName(target);
  const secretsTemporary = secretsTarget ? temporaryName(secretsTarget) : null;
  const started = performance.now();
  try {
    createPrivate(temporary);
    if (config.DATABASE_URL) await dumpPostgres(config, temporary, options.pgDump);
    else await copySqlite(resolve(config.DATA_DIR, 'tollgate.db'), temporary);
    fsyncFile(temporary);
    if (secretsTemporary) {
      createPrivate(secretsTemporary);
      copyFileSync(keyFile!, secretsTemporary);
      chmodSync(secretsTemporary, 0o600);
      fsyncFile(secretsTemporary);
    }
    const ms = Math.round(performance.now() - started);
    // The key file first: a backup under its name always has its key file beside it.
    if (secretsTemporary) place(secretsTemporary, secretsTarget!, force);
    place(temporary, target, force);
    fsyncFolder(dirname(target));
    const secretsNotInBackup = SECRET_VARIABLES.filter((variable) => config[variable]);
    return {
      file: target,
      kind: config.DATABASE_URL ? 'postgres-dump' : 'sqlite',
      bytes: statSync(target).size,
      ms,
      secretsFile: secretsTarget,
      secretsNotInBackup,
      note:
        (secretsTarget
          ? `Keep ${basename(target)} and ${basename(secretsTarget)} together: without the key file the stored API keys cannot be opened.`
          : config.DATABASE_URL
            ? 'No SECRETS_FILE: the secrets not set in the environment are in the database, and so in this dump.'
            : 'No key file: every secret comes from the environment.') +
        (secretsNotInBackup.length > 0
          ? ` ${secretsNotInBackup.join(', ')} ${secretsNotInBackup.length === 1 ? 'is' : 'are'} set in the environment and in no file here: keep ${secretsNotInBackup.length === 1 ? 'it' : 'them'} with the backup.`
          : ''),
    };
  } finally {
    removeSqliteFiles(temporary);
    if (secretsTemporary) rmSync(secretsTemporary, { force: true });
  }
}

export interface RestoreReport {
  database: string;
  from: string;
  secretsFile: string | null;
  /** What was there before, kept under new names (delete them once the restored server is checked). */
  movedAside: string[];
  note: string;
}

/**
 * `tollgate restore --from <path>` (SQLite): puts a backup back as `DATA_DIR/tollgate.db`, with the key file
 * copied beside it (`<path>.secrets.json`, or `secrets`). What it adds to copying the files by hand:
 * - it refuses while a server has the database open (the check of `repack-sqlite`, made by SQLite itself);
 * - it checks the backup (SQLite's integrity check, a Tollgate database) before anything is moved;
 * - it moves the database it replaces aside, with its `-wal` and `-shm`: a `-wal` left beside a restored
 *   file would be replayed into it on the next open, and corrupt it;
 * - it refuses without a key file unless every secret is set in the environment.
 * The server applies the migrations of a newer version when it starts, as on any upgrade.
 */
export function restoreSqlite(
  config: Pick<PlatformConfig, 'DATABASE_URL' | 'DATA_DIR' | 'SECRETS_FILE'> &
    Partial<Record<(typeof SECRET_VARIABLES)[number], string>>,
  from: string,
  options: { secrets?: string } = {},
): RestoreReport {
  if (config.DATABASE_URL)
    throw new Error(
      'restore works on SQLite; on PostgreSQL, stop the servers, then: pg_restore --exit-on-error --single-transaction ' +
        '--dbname=<DATABASE_URL> <backup> into a database without that schema (drop or rename it first), put the key ' +
        'file back as SECRETS_FILE, and start (README "Backups").',
    );
  const source = resolve(from);
  if (!existsSync(source)) throw new Error(`no backup at ${source}`);
  const backupSecrets = resolve(options.secrets ?? source + SECRETS_SUFFIX);
  const keyFile = secretsFilePath(config)!;
  const allInEnvironment = SECRET_VARIABLES.every((variable) => config[variable]);
  const withSecrets = existsSync(backupSecrets);
  if (!withSecrets && !allInEnvironment)
    throw new Error(
      `no key file at ${backupSecrets}: a database restored without the key file it was made with holds API keys no one ` +
        'can open. Pass --secrets <file> (the secrets.json kept with this backup). Nothing was changed.',
    );
  checkBackup(source);

  const dataDir = resolve(config.DATA_DIR);
  const database = join(dataDir, 'tollgate.db');
  if (!existsSync(dataDir)) throw new Error(`${dataDir} does not exist: create it (mode 0700) or set DATA_DIR`);
  if (existsSync(database)) {
    const live = new DatabaseSync(database);
    try {
      takeSoleUse(live, database);
    } finally {
      live.close();
    }
  }

  // The copy is made beside the database before anything is moved, so a full disk changes nothing.
  const temporary = temporaryName(database);
  const secretsTemporary = withSecrets ? temporaryName(keyFile) : null;
  const movedAside: string[] = [];
  try {
    createPrivate(temporary);
    copyFileSync(source, temporary);
    chmodSync(temporary, 0o600);
    fsyncFile(temporary);
    if (secretsTemporary) {
      createPrivate(secretsTemporary);
      copyFileSync(backupSecrets, secretsTemporary);
      chmodSync(secretsTemporary, 0o600);
      fsyncFile(secretsTemporary);
    }
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const aside = (file: string) => {
      if (!existsSync(file)) return;
      renameSync(file, `${file}.before-restore-${stamp}`);
      movedAside.push(`${file}.before-restore-${stamp}`);
    };
    for (const suffix of ['-wal', '-shm', '-journal']) aside(database + suffix);
    if (secretsTemporary) {
      if (existsSync(keyFile) && !readFileSync(keyFile).equals(readFileSync(secretsTemporary))) aside(keyFile);
      renameSync(secretsTemporary, keyFile);
      fsyncFolder(dirname(keyFile));
    }
    aside(database);
    renameSync(temporary, database);
    fsyncFolder(dataDir);
  } finally {
    rmSync(temporary, { force: true });
    if (secretsTemporary) rmSync(secretsTemporary, { force: true });
  }
  return {
    database,
    from: source,
    secretsFile: withSecrets ? keyFile : null,
    movedAside,
    note: 'Start the server: it applies any newer migrations. Then check GET /api/admin/ledger/verify.',
  };
}

/** The backup is a sound SQLite file holding Tollgate's tables; throws, naming what is wrong, otherwise. */
function checkBackup(file: string): void {
  let copy: DatabaseSync;
  try {
    copy = new DatabaseSync(file, { readOnly: true });
  } catch (error) {
    throw new Error(`${file} cannot be opened as SQLite (${(error as Error).message})`);
  }
  try {
    const problems = copy.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
    if (problems.length !== 1 || problems[0]!.integrity_check !== 'ok')
      throw new Error(`${file} fails SQLite's integrity check: ${problems[0]?.integrity_check}. Nothing was changed.`);
    const tollgate = copy.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'kysely_migration'").get();
    if (!tollgate) throw new Error(`${file} is not a Tollgate database (no migration table). Nothing was changed.`);
  } catch (error) {
    if ((error as Error).message.includes('Nothing was changed')) throw error;
    throw new Error(`${file} is not a SQLite database (${(error as Error).message}). Nothing was changed.`);
  } finally {
    copy.close();
  }
}

export { DatabaseInUseError };
