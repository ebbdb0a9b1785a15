import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Kysely, Migration } from 'kysely';
import type { PlatformConfig } from './config.ts';
import type { Db } from './db/connect.ts';
import { ownTables } from './db/own-tables.ts';
import type { Logger } from './logger.ts';

/** Storage of the secrets Tollgate generates for itself when the operator gave none. */
export interface InstanceSecretsTable {
  name: string;
  value: string;
  created_at: number;
}

/** The platform's one table, as its own view of the database sees it. */
function secretsTable(db: Db): Kysely<{ instance_secrets: InstanceSecretsTable }> {
  return ownTables<{ instance_secrets: InstanceSecretsTable }>(db);
}

/** The platform's own migration: the table of generated secrets. */
export const platformMigrations: Record<string, Migration> = {
  '0001_platform_instance_secrets': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('instance_secrets')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};

/**
 * Returns the secret stored under `name`, generating and storing it on first use. The insert ignores a
 * conflict and the row is read back, so processes starting together on one database agree on one value.
 */
export async function getOrCreateSecret(shared: Db, name: string, generate: () => string): Promise<string> {
  const db = secretsTable(shared);
  const existing = await db.selectFrom('instance_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('instance_secrets')
    .values({ name, value: generate(), created_at: Date.now() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db
    .selectFrom('instance_secrets')
    .select('value')
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return row.value;
}

/**
 * Replaces the secret `name` with `value` if it still holds `expected` (a compare-and-set, so processes
 * doing the same change at once agree); true when this call changed it.
 */
export async function replaceSecret(shared: Db, name: string, expected: string, value: string): Promise<boolean> {
  const result = await secretsTable(shared)
    .updateTable('instance_secrets')
    .set({ value })
    .where('name', '=', name)
    .where('value', '=', expected)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The secrets the service runs with, from the configuration or generated once and kept. */
export interface InstanceSecrets {
  cookieSecret: string;
  encryptionKey: Buffer;
  adminTokens: string[];
}

/** One operator secret: its variable (and key in the key file), its `instance_secrets` row, how to make one. */
interface SecretSpec {
  variable: 'COOKIE_SECRET' | 'ENCRYPTION_KEY' | 'TOLLGATE_ADMIN_TOKEN';
  row: string;
  generate: () => string;
  valid: (value: string) => boolean;
  /** What a valid value is, for the operator who wrote an invalid one into the key file. */
  expected: string;
}

const SPECS: SecretSpec[] = [
  {
    variable: 'ENCRYPTION_KEY',
    row: 'encryption_key',
    generate: () => randomBytes(32).toString('base64'),
    valid: (v) => decodeKey(v).length === 32,
    expected: '32 random bytes in base64 (as `openssl rand -base64 32` prints)',
  },
  {
    variable: 'COOKIE_SECRET',
    row: 'cookie_secret',
    generate: () => randomBytes(32).toString('base64url'),
    valid: (v) => v.length >= 32,
    expected: 'a random string of at least 32 characters (as `openssl rand -hex 32` prints)',
  },
  {
    variable: 'TOLLGATE_ADMIN_TOKEN',
    row: 'admin_token',
    generate: () => `tga_${randomBytes(32).toString('base64url')}`,
    valid: (v) => v.trim().length >= 24,
    expected: 'a random token of at least 24 characters, or several separated by spaces',
  },
];

function decodeKey(value: string): Buffer {
  return Buffer.from(value, /[-_]/.test(value) ? 'base64url' : 'base64');
}

/**
 * Where the key file is: `SECRETS_FILE`, or on SQLite `DATA_DIR/secrets.json`. PostgreSQL has no default:
 * instances on several machines share the database, not a folder, and each would make its own keys.
 */
export function secretsFilePath(
  config: Pick<PlatformConfig, 'SECRETS_FILE' | 'DATABASE_URL' | 'DATA_DIR'>,
): string | undefined {
  if (config.SECRETS_FILE) return resolve(config.SECRETS_FILE);
  return config.DATABASE_URL ? undefined : join(resolve(config.DATA_DIR), 'secrets.json');
}

function readKeyFile(path: string, log?: Logger): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`SECRETS_FILE: cannot read ${path} (${(error as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`SECRETS_FILE: ${path} is not JSON (${(error as Error).message})`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error(`SECRETS_FILE: ${path} must hold a JSON object of ${SPECS.map((s) => s.variable).join(', ')}`);
  const values = parsed as Record<string, unknown>;
  for (const spec of SPECS) {
    const value = values[spec.variable];
    if (value !== undefined && (typeof value !== 'string' || !spec.valid(value)))
      throw new Error(`SECRETS_FILE: ${spec.variable} in ${path} is not a valid value: it must be ${spec.expected}`);
  }
  if (log && (statSync(path).mode & 0o077) !== 0)
    log.warn({ path }, 'the key file can be read by other users of this machine: chmod 600 it');
  return values as Record<string, string>;
}

/**
 * Creates the key file with `values`, readable by its owner only, all at once or not at all: the content is
 * written and synced under a temporary name, then linked to its name, which fails if another process
 * starting on the same folder got there first. Returns what the file holds afterwards, whoever wrote it.
 */
function createKeyFile(path: string, values: Record<string, string>, log: Logger): Record<string, string> {
  // A named file may be in a folder not made yet: made for this user only, like the data folder.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(values, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  // The umask can only take bits away; chmod states the intent whatever the umask.
  chmodSync(temporary, 0o600);
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  // The new name must survive a crash too. Some systems cannot sync a folder; the file itself is synced.
  try {
    const directory = openSync(dirname(path), 'r');
    try {
      fsyncSync(directory);
    } finally {
      closeSync(directory);
    }
  } catch {}
  return readKeyFile(path, log)!;
}

/**
 * Refuses, before anything is written to the database, a start on PostgreSQL whose key file is named but
 * missing or unreadable while a secret is not in the environment: {@link loadInstanceSecrets} would refuse
 * it anyway, but only after the migrations had changed the schema of a database the operator pointed at by
 * mistake (or while their key file was still on its way to the machine).
 */
export function checkKeyFileBeforeMigrating(config: PlatformConfig): void {
  if (!config.DATABASE_URL || !config.SECRETS_FILE) return;
  if (SPECS.every((spec) => config[spec.variable])) return;
  const path = secretsFilePath(config)!;
  // No log: the load that follows warns about the file's mode, once.
  if (!readKeyFile(path)) throw new Error(missingKeyFileMessage(path));
}

function missingKeyFileMessage(path: string): string {
  return `SECRETS_FILE: ${path} does not exist (on PostgreSQL, write it once and give every instance the same file)`;
}

/**
 * Resolves every secret. Security invariant: a copy of the database alone must not reveal the key that
 * seals API keys, nor the cookie secret or the operator token. So each comes, in order of preference, from
 * the environment (or `TOLLGATE_CONFIG`), then from the key file, and only then from the database, with a
 * warning the operator cannot miss. On SQLite the key file is made on first start, so one command still
 * runs the service; secrets an earlier version generated into the database move into it and leave the
 * database. On PostgreSQL a named key file must exist (every instance needs the same one).
 */
export async function loadInstanceSecrets(shared: Db, config: PlatformConfig, log: Logger): Promise<InstanceSecrets> {
  const db = secretsTable(shared);
  const values = new Map<SecretSpec['variable'], string>();
  const missing = () => SPECS.filter((spec) => !values.has(spec.variable));
  for (const spec of SPECS) if (config[spec.variable]) values.set(spec.variable, config[spec.variable]!);

  const path = secretsFilePath(config);
  if (path && missing().length > 0) {
    let file = readKeyFile(path, log);
    if (!file && config.DATABASE_URL) throw new Error(missingKeyFileMessage(path));
    if (!file) {
      const stored = await db
        .selectFrom('instance_secrets')
        .select(['name', 'value'])
        .where(
          'name',
          'in',
          missing().map((spec) => spec.row),
        )
        .execute();
      const fresh: Record<string, string> = {};
      for (const spec of missing())
        fresh[spec.variable] = stored.find((row) => row.name === spec.row)?.value ?? spec.generate();
      file = createKeyFile(path, fresh, log);
      const moved = SPECS.filter((spec) =>
        stored.some((row) => row.name === spec.row && row.value === file![spec.variable]),
      );
      if (moved.length > 0) {
        await db
          .deleteFrom('instance_secrets')
          .where(
            'name',
            'in',
            moved.map((spec) => spec.row),
          )
          .execute();
        log.warn(
          { path, moved: moved.map((spec) => spec.variable) },
          'secrets generated into the database by an earlier version were moved to the key file: back it up with the database (without it stored API keys cannot be opened); older copies of the database still hold them',
        );
      } else {
        log.info({ path }, 'generated the instance secrets into the key file: back it up with the database');
      }
    }
    for (const spec of missing()) if (file[spec.variable]) values.set(spec.variable, file[spec.variable]);
  }

  const inDatabase = missing();
  for (const spec of inDatabase) values.set(spec.variable, await getOrCreateSecret(shared, spec.row, spec.generate));
  if (inDatabase.length > 0) {
    log.warn(
      { secrets: inDatabase.map((spec) => spec.variable) },
      `SECURITY: ${inDatabase.map((spec) => spec.variable).join(', ')} ${inDatabase.length === 1 ? 'is' : 'are'} kept in the database, so anyone with a copy of it can read them (the encryption key opens every stored API key). Set them in the environment or in the key file SECRETS_FILE.`,
    );
  }

  const encryptionKey = decodeKey(values.get('ENCRYPTION_KEY')!);
  if (encryptionKey.length !== 32) throw new Error('ENCRYPTION_KEY must decode to 32 bytes');
  return {
    cookieSecret: values.get('COOKIE_SECRET')!,
    encryptionKey,
    adminTokens: values.get('TOLLGATE_ADMIN_TOKEN')!.split(/\s+/).filter(Boolean),
  };
}
