import { randomBytes } from 'node:crypto';
import type { Kysely, Migration } from 'kysely';
import type { Config } from './config.ts';
import type { Db } from './db/connect.ts';

/** Storage of the secrets Tollgate generates for itself when the operator gave none. */
export interface InstanceSecretsTable {
  name: string;
  value: string;
  created_at: number;
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
export async function getOrCreateSecret(db: Db, name: string, generate: () => string): Promise<string> {
  const existing = await db.selectFrom('instance_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('instance_secrets')
    .values({ name, value: generate(), created_at: Date.now() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('instance_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

/** The secrets the service runs with, from the configuration or generated once and kept. */
export interface InstanceSecrets {
  cookieSecret: string;
  encryptionKey: Buffer;
  adminTokens: string[];
}

/** Resolves every secret: the operator's value when configured, else the kept generated one. */
export async function loadInstanceSecrets(db: Db, config: Config): Promise<InstanceSecrets> {
  const cookieSecret = config.COOKIE_SECRET ?? (await getOrCreateSecret(db, 'cookie_secret', () => randomBytes(32).toString('base64url')));
  const encryptionKey = Buffer.from(
    config.ENCRYPTION_KEY ?? (await getOrCreateSecret(db, 'encryption_key', () => randomBytes(32).toString('base64'))),
    config.ENCRYPTION_KEY?.match(/[-_]/) ? 'base64url' : 'base64',
  );
  if (encryptionKey.length !== 32) throw new Error('ENCRYPTION_KEY must decode to 32 bytes');
  const adminTokens = config.TOLLGATE_ADMIN_TOKEN
    ? config.TOLLGATE_ADMIN_TOKEN.split(/\s+/).filter(Boolean)
    : [await getOrCreateSecret(db, 'admin_token', () => `tga_${randomBytes(32).toString('base64url')}`)];
  return { cookieSecret, encryptionKey, adminTokens };
}
