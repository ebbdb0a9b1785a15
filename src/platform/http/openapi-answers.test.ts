import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { describeEachDatabase, type TestResponse } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

// ajv-formats is CommonJS: its default export is the plugin under Node's ESM interop.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Operations whose 2XX body is the upstream's own (OpenAI's) shape, passed through and so not restated. */
const PASSED_THROUGH = new Set([
  'POST /api/v1/embeddings',
  'POST /api/v1/images/generations',
  'POST /api/v1/images/edits',
  'POST /api/v1/audio/transcriptions',
  'POST /api/v1/audio/translations',
  'POST /api/v1/realtime/sessions',
]);

/**
 * What a client generated from `document` would find wrong in `response` to `method templatePath`: an
 * undocumented status or content type, a body where none is documented, or a body its schema refuses.
 */
function mismatches(document: any, method: string, templatePath: string, response: TestResponse): string[] {
  const operation = document.paths[templatePath]?.[method.toLowerCase()];
  const where = `${method} ${templatePath} -> ${response.status}`;
  if (!operation) return [`${where}: no such operation in the document`];
  const status = String(response.status);
  const documented = operation.responses[status] ?? operation.responses[`${status[0]}XX`];
  if (!documented) return [`${where}: status not documented (${Object.keys(operation.responses)})`];
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!documented.content) return response.text ? [`${where}: a ${type} body where none is documented`] : [];
  const media = documented.content[type];
  if (!media) return [`${where}: content type ${type} not documented (${Object.keys(documented.content)})`];
  if (!type.endsWith('json') || !media.schema) return [];
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ components: document.components }, 'document');
  const validate = ajv.compile(
    JSON.parse(JSON.stringify(media.schema).replaceAll('"#/components', '"document#/components')),
  );
  return validate(response.body)
    ? []
    : [`${where}: ${ajv.errorsText(validate.errors)}; body ${response.text.slice(0, 300)}`];
}

describeEachDatabase('the answers against the OpenAPI document', (env) => {
  it('documents the shape of every 2XX JSON answer, so that generated clients get a type and not unknown', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const shapeless: string[] = [];
    for (const [path, methods] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        if (PASSED_THROUGH.has(`${method.toUpperCase()} ${path}`)) continue;
        for (const [status, answer] of Object.entries<any>(operation.responses)) {
          if (!status.startsWith('2')) continue;
          const schema = answer.content?.['application/json']?.schema;
          if (
            answer.content?.['application/json'] &&
            !(schema?.type || schema?.$ref || schema?.anyOf || schema?.oneOf || schema?.allOf)
          )
            shapeless.push(`${method.toUpperCase()} ${path} ${status}`);
        }
      }
    }
    assert.deepEqual(shapeless, []);
  });

  it('answers the operator, session and OAuth-start routes with documented statuses, content types and bodies', async () => {
    const document = (await env.request('GET', '/api/openapi.json')).body;
    const user = await fundedUser(env, 1);
    const app = await env.dashboard(user.session, 'POST', '/api/user/apps', {
      name: 'app',
      redirectUris: ['http://127.0.0.1:9/cb'],
      scopes: ['ai:chat'],
      type: 'public',
    });
    const calls: [string, string, TestResponse][] = [
      ['POST', '/api/admin/migrate', await env.admin('POST', '/api/admin/migrate')],
      ['GET', '/api/admin/cron', await env.admin('GET', '/api/admin/cron')],
      ['POST', '/api/admin/cron/{job}', await env.admin('POST', '/api/admin/cron/release-expired-holds')],
      ['POST', '/api/admin/cron/{job}', await env.admin('POST', '/api/admin/cron/no-such-job')],
      ['POST', '/api/admin/migrate', await env.request('POST', '/api/admin/migrate')],
      [
        'GET',
        '/api/oauth/authorize',
        await env.request('GET', `/api/oauth/authorize?client_id=${app.body.clientId}&response_type=code`),
      ],
      ['POST', '/api/auth/signout', await env.dashboard(user.session, 'POST', '/api/auth/signout')],
      ['POST', '/api/auth/signout', await env.request('POST', '/api/auth/signout')],
    ];
    assert.deepEqual(
      calls.flatMap(([method, path, response]) => mismatches(document, method, path, response)),
      [],
    );
  });
});
