import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import fc from 'fast-check';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import type { ChaosProfile } from './profile.ts';
import { bodiesFor, jsonOperations, type GeneratedBody, type JsonOperation } from './openapi-bodies.ts';
import { createChaosUser, send, type ChaosUser } from './client.ts';
import { count } from './figures.ts';

/** Above every route family's body limit (BODY_LIMIT_*_BYTES, 25 MiB at most by default): such a body must be refused whole. */
const BODY_LIMIT_BYTES = 25 * 1024 * 1024;
const WEBHOOK_SECRET = `whsec_${Buffer.from('chaos-suite-webhook-signing-key!').toString('base64')}`;

/** Row counts of every table of the schema, read in one statement. */
async function rowCounts(env: TestEnv, tables: string[]): Promise<Record<string, number>> {
  const query = sql.join(
    tables.map((table) => sql`select ${table} as name, count(*) as n from ${sql.table(table)}`),
    sql` union all `,
  );
  const rows = (await sql<{ name: string; n: string | number }>`${query}`.execute(env.service.ctx.db)).rows;
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.n)]));
}

/** The tables of the suite's database (migration bookkeeping included: it must not move either). */
async function tablesOf(env: TestEnv): Promise<string[]> {
  const { db } = env.service.ctx;
  const query =
    env.kind === 'postgres'
      ? sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`
      : sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`;
  return (await query.execute(db)).rows.map((row) => row.name).sort();
}

/**
 * The credentials a request to `path` carries, so bodies reach the handlers and not only the validator:
 * the operator token on the operator API, an API key on the AI API, the dashboard session elsewhere.
 */
function credentialsFor(path: string, user: ChaosUser, adminToken: string): Record<string, string> {
  if (path.startsWith('/api/admin/')) return { authorization: `Bearer ${adminToken}` };
  if (path.startsWith('/api/v1/') && !path.startsWith('/api/v1/predictions'))
    return { authorization: `Bearer ${user.key}` };
  return { cookie: user.cookie, 'x-csrf-token': user.csrfToken };
}

/** The operation's path with its parameters filled: the user's own id where one fits, else a made-up value. */
function concretePath(operation: JsonOperation, user: ChaosUser): string {
  return operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === 'id' ? user.userId : name === 'vendor' ? 'chaos' : `chaos-${name}`,
  );
}

/**
 * Every JSON endpoint of the OpenAPI document (and the Replicate webhook, whose body is raw bytes) fed
 * generated bodies: text that is not JSON, wrongly typed fields, values far past their bounds, arbitrary
 * JSON, and bodies over the server's limit. No answer is a 5xx, and a refused request writes nothing: the
 * row count of every table is unchanged after it (rate-limit counters, the only state a refusal may touch,
 * are not in the database).
 */
export function bodyFuzzSuite(profile: ChaosProfile): void {
  describeEachDatabase(
    'malformed, oversized and wrongly typed bodies on every JSON endpoint',
    (env) => {
      let operations: JsonOperation[] = [];
      let tables: string[] = [];
      let user: ChaosUser;

      before(async () => {
        const document = await send(env.baseUrl, 'GET', '/api/openapi.json');
        assert.equal(document.status, 200);
        operations = jsonOperations(document.body);
        operations.push({
          method: 'POST',
          path: '/api/webhooks/replicate',
          schema: {
            type: 'object',
            required: ['id', 'status'],
            properties: { id: { type: 'string' }, status: { type: 'string' } },
          },
        });
        tables = await tablesOf(env);
        user = await createChaosUser(env.baseUrl, env.adminToken, { credits: 5 });
      });

      /** Sends one body; asserts no 5xx, and no write when it was refused. Returns the status. */
      async function probe(operation: JsonOperation, body: GeneratedBody, withCredentials: boolean): Promise<number> {
        const before = await rowCounts(env, tables);
        const headers = {
          'content-type': body.contentType,
          ...(withCredentials ? credentialsFor(operation.path, user, env.adminToken) : {}),
        };
        const answer = await send(env.baseUrl, operation.method, concretePath(operation, user), {
          raw: body.text,
          headers,
        });
        count('bodiesSent');
        const what = `${operation.method} ${operation.path} (${body.kind}, ${body.text.length} bytes: ${body.text.slice(0, 120)}) answered ${answer.status} ${answer.text.slice(0, 300)}`;
        assert.ok(answer.status < 500, what);
        if (answer.status >= 400) {
          count('faultsInjected');
          assert.deepEqual(await rowCounts(env, tables), before, `a refused request wrote rows: ${what}`);
        }
        return answer.status;
      }

      it('every operation with a JSON body: no 5xx, no partial write', async () => {
        assert.ok(operations.length >= 10, `the document lists ${operations.length} JSON operations`);
        const statuses = new Map<number, number>();
        for (const operation of operations) {
          await fc.assert(
            fc.asyncProperty(bodiesFor(operation.schema), fc.boolean(), async (body, anonymous) => {
              const status = await probe(operation, body, !anonymous || operation.path.startsWith('/api/auth/'));
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }),
            { numRuns: profile.bodiesPerOperation },
          );
        }
        // The generator reaches past validation too: some bodies are refused by handlers, some accepted.
        assert.ok(
          [...statuses.keys()].some((status) => status === 400),
          JSON.stringify([...statuses]),
        );
      });

      it('a body over the server limit is refused whole', async () => {
        const big = `{"padding":"${'x'.repeat(BODY_LIMIT_BYTES)}"}`;
        for (const operation of operations.slice(0, Math.min(operations.length, profile.overLimitOperations))) {
          const status = await probe(
            operation,
            { kind: 'oversized', text: big, contentType: 'application/json' },
            true,
          );
          assert.equal(status, 413, `${operation.method} ${operation.path}`);
        }
      });
    },
    { config: { REPLICATE_WEBHOOK_SECRET: WEBHOOK_SECRET } },
  );
}
