import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { withPostgres, type Store } from './tollgate.ts';

/**
 * Grows a benchmark store to a realistic scale: `users` users and `keys` API keys spread evenly over them,
 * inserted with SQL straight into the tables (the APIs would take hours for a million keys). The rows have
 * the shapes real rows have — prefixed ids, unique lower-case emails, a unique 64-hex `key_hash`, a spending
 * limit on a third of the keys — but the sealed key values are dummy text: the hot path looks keys up by
 * hash and never unseals them, and no request uses a seeded key (the load uses the provisioned ones).
 * The instance must be stopped while SQLite is seeded (one writer at a time).
 */
export async function seedScale(store: Store, users: number, keys: number): Promise<void> {
  if (store.dialect === 'postgres') return seedPostgres(store.schema, users, keys);
  seedSqlite(join(store.dataDir, 'tollgate.db'), users, keys);
}

const hex = (algorithm: string, text: string) => createHash(algorithm).update(text).digest('hex');

/**
 * PostgreSQL: one INSERT … SELECT over generate_series per table; the server computes ids and hashes.
 * The keys' indexes and constraints (and the foreign keys that point at the table) are dropped for the bulk
 * insert and rebuilt afterwards from their own definitions, so the table ends exactly as the migrations made
 * it; building an index once by sorting is much faster than a million random insertions into it.
 */
async function seedPostgres(schema: string, users: number, keys: number): Promise<void> {
  await withPostgres(async (client) => {
    await client.query(`SET search_path TO ${schema}`);
    await client.query("SET maintenance_work_mem = '512MB'");
    const now = Date.now();
    await client.query(
      `INSERT INTO users (id, email, name, image, password_hash, created_at)
       SELECT 'usr_' || substr(md5('bench-user-' || i), 1, 20), 'seed-' || i || '@bench.invalid', 'Seed user ' || i, NULL,
              'scrypt$16384$8$1$' || md5('salt' || i) || '$' || md5('hash' || i), $1::bigint - i
       FROM generate_series(0, $2::int - 1) AS i`,
      [now, users],
    );
    const table = `${schema}.api_keys`;
    const { rows: constraints } = await client.query<{ owner: string; name: string; type: string; definition: string }>(
      `SELECT conrelid::regclass::text AS owner, conname AS name, contype AS type, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint WHERE (conrelid = $1::regclass OR confrelid = $1::regclass) AND contype IN ('p', 'u', 'f')`,
      [table],
    );
    const { rows: indexes } = await client.query<{ name: string; definition: string }>(
      `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS definition FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)`,
      [table],
    );
    const order = (type: string) => (type === 'f' ? 0 : 1);
    await client.query('BEGIN');
    for (const c of [...constraints].sort((a, b) => order(a.type) - order(b.type)))
      await client.query(`ALTER TABLE ${c.owner} DROP CONSTRAINT "${c.name}"`);
    for (const index of indexes) await client.query(`DROP INDEX "${index.name}"`);
    await client.query(
      `INSERT INTO api_keys (id, user_id, app_id, name, key_hash, key_sealed, permissions, last_used_at, created_at, revoked_at)
       SELECT 'key_' || substr(md5('bench-key-' || i), 1, 20), 'usr_' || substr(md5('bench-user-' || (i % $2::int)), 1, 20), NULL, 'Seed key ' || i,
              encode(sha256(convert_to('bench-key-value-' || i, 'UTF8')), 'hex'), 'v1.' || md5('sealed' || i), '["ai:chat"]',
              NULL, $1::bigint - i, NULL
       FROM generate_series(0, $3::int - 1) AS i`,
      [now, users, keys],
    );
    // A third of the keys have a daily limit (billing's table since migration 1010).
    await client.query(
      `INSERT INTO spending_limits (subject, period, amount)
       SELECT 'key:key_' || substr(md5('bench-key-' || i), 1, 20), 'daily', 5000000 FROM generate_series(0, $1::int - 1) AS i WHERE i % 3 = 0`,
      [keys],
    );
    for (const c of [...constraints].sort((a, b) => order(b.type) - order(a.type)))
      await client.query(`ALTER TABLE ${c.owner} ADD CONSTRAINT "${c.name}" ${c.definition}`);
    for (const index of indexes) await client.query(index.definition);
    await client.query('COMMIT');
    await client.query('ANALYZE users; ANALYZE api_keys; ANALYZE spending_limits');
  });
}

const ID_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';

/**
 * `n` distinct ids shaped like `newId` makes them (prefix, 20 characters of its alphabet), in ascending
 * order: 6 characters spread evenly over the id space, then 14 random ones. Inserting in index order turns a
 * million random B-tree insertions into appends, which is what makes seeding SQLite take seconds, not minutes.
 */
function ascendingIds(prefix: string, n: number): string[] {
  const base = ID_ALPHABET.length;
  const space = base ** 6;
  const random = randomBytes(n * 14);
  const ids = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    let position = Math.floor((i * space) / n);
    let head = '';
    for (let d = 0; d < 6; d++) {
      head = ID_ALPHABET[position % base] + head;
      position = Math.floor(position / base);
    }
    let tail = '';
    for (let d = 0; d < 14; d++) tail += ID_ALPHABET[random[i * 14 + d] % base];
    ids[i] = prefix + head + tail;
  }
  return ids;
}

/** `n` distinct 64-hex values spread evenly over the SHA-256 space, ascending (a hash's first 8 digits, then random). */
function ascendingHashes(n: number): string[] {
  const random = randomBytes(n * 28).toString('hex');
  return Array.from(
    { length: n },
    (_, i) =>
      Math.floor((i * 2 ** 32) / n)
        .toString(16)
        .padStart(8, '0') + random.slice(i * 56, i * 56 + 56),
  );
}

/** SQLite: multi-row INSERTs of prepared statements in index order, 100,000 rows per transaction. */
function seedSqlite(file: string, users: number, keys: number): void {
  const db = new DatabaseSync(file);
  try {
    db.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA foreign_keys = ON; PRAGMA cache_size = -1000000; PRAGMA temp_store = MEMORY;',
    );
    const now = Date.now();
    const rowsPerStatement = 500;
    const insertMany = (table: string, columns: string[], count: number, row: (i: number) => unknown[]) => {
      const placeholders = (n: number) =>
        Array.from({ length: n }, () => `(${columns.map(() => '?').join(', ')})`).join(', ');
      const full = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${placeholders(rowsPerStatement)}`);
      for (let from = 0; from < count; from += 100_000) {
        db.exec('BEGIN');
        for (let start = from; start < Math.min(count, from + 100_000); start += rowsPerStatement) {
          const n = Math.min(rowsPerStatement, count - start);
          const values: any[] = [];
          for (let k = 0; k < n; k++) values.push(...row(start + k));
          (n === rowsPerStatement
            ? full
            : db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${placeholders(n)}`)
          ).run(...values);
        }
        db.exec('COMMIT');
      }
    };
    const userIds = ascendingIds('usr_', users);
    // Emails ascend with the ids too (zero-padded), so the unique email index is appended to as well.
    const width = String(users).length;
    insertMany('users', ['id', 'email', 'name', 'image', 'password_hash', 'created_at'], users, (i) => [
      userIds[i],
      `seed-${String(i).padStart(width, '0')}@bench.invalid`,
      `Seed user ${i}`,
      null,
      `scrypt$16384$8$1$${hex('md5', `salt${i}`)}$${hex('md5', `hash${i}`)}`,
      now - i,
    ]);
    const keyIds = ascendingIds('key_', keys);
    const keyHashes = ascendingHashes(keys);
    insertMany(
      'api_keys',
      [
        'id',
        'user_id',
        'app_id',
        'name',
        'key_hash',
        'key_sealed',
        'permissions',
        'last_used_at',
        'created_at',
        'revoked_at',
      ],
      keys,
      (i) => [
        keyIds[i],
        userIds[Math.floor((i * users) / keys)],
        null,
        `Seed key ${i}`,
        keyHashes[i],
        `v1.sealed-dummy-${i}`,
        '["ai:chat"]',
        null,
        now - keys + i,
        null,
      ],
    );
    // A third of the keys have a daily limit (billing's table since migration 1010), in key order.
    insertMany('spending_limits', ['subject', 'period', 'amount'], Math.ceil(keys / 3), (j) => [
      `key:${keyIds[j * 3]}`,
      'daily',
      5_000_000,
    ]);
    db.exec('ANALYZE');
  } finally {
    db.close();
  }
}
