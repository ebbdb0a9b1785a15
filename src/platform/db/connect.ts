import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Tables } from '../../tables.ts';
import { nodeSqliteDialect } from './node-sqlite-dialect.ts';
import { SchemaScopedPostgresDialect } from './postgres-dialect.ts';

// int8 columns hold micro-credits and epoch milliseconds: both fit a JS number exactly (< 2^53).
pg.types.setTypeParser(20, (value) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new RangeError(`int8 value ${value} exceeds 2^53`);
  return parsed;
});

/** Which SQL engine is behind the connection; a few statements differ (row locks, upserts). */
export type DialectName = 'sqlite' | 'postgres';

/** The typed database handle every feature uses. */
export type Db = Kysely<Tables>;

/** An open database with what the features need to know about it. */
export interface Database {
  db: Db;
  dialect: DialectName;
  close(): Promise<void>;
}

/** Opens PostgreSQL when `DATABASE_URL` is set, else the SQLite file `DATA_DIR/tollgate.db`. */
export function openDatabase(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_SCHEMA' | 'DATABASE_POOL_SIZE' | 'DATA_DIR'>): Database {
  if (config.DATABASE_URL) {
    const pool = new pg.Pool({
      connectionString: config.DATABASE_URL,
      max: config.DATABASE_POOL_SIZE,
      options: `-c search_path=${config.DATABASE_SCHEMA}`,
    });
    const db = new Kysely<Tables>({ dialect: new SchemaScopedPostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  const dir = resolve(config.DATA_DIR);
  mkdirSync(dir, { recursive: true });
  const db = new Kysely<Tables>({ dialect: nodeSqliteDialect(join(dir, 'tollgate.db')) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}
