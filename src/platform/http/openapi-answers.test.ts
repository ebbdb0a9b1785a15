import { after, before, it } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestResponse } from '../../testing/harness.ts';
import { fundedUser, putModel, wavFile } from '../../gateway/testing.ts';
import { mismatches, postForm } from '../../testing/openapi-answers.ts';

/** A field OpenAI might add to any answer tomorrow: a pass-through must hand it on, and the document allow it. */
const NEW_FIELD = { upstream_new_field: 'kept' };

/**
 * A real HTTP stand-in for OpenAI that answers each pass-through endpoint as OpenAI does (openai-node 7.59's
 * types, the optional fields included), with {@link NEW_FIELD} added to every object it answers.
 */
const openai = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString('latin1');
  const body = (req.headers['content-type'] ?? '').includes('json') ? JSON.parse(raw) : {};
  const json = (answer: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  };
  const images = {
    created: 1_764_000_000,
    data: [{ b64_json: Buffer.from('png').toString('base64'), ...NEW_FIELD }],
    background: 'opaque',
    output_format: 'png',
    quality: 'low',
    size: '1024x1024',
    usage: {
      input_tokens: 50,
      input_tokens_details: { image_tokens: 40, text_tokens: 10 },
      output_tokens: 272,
      total_tokens: 322,
    },
    ...NEW_FIELD,
  };
  const segment = { id: 0, seek: 0, start: 0, end: 2.5, text: 'hello', tokens: [1], temperature: 0, avg_logprob: -0.2 };
  const verbose = /name="response_format"\r\n\r\nverbose_json/.test(raw);
  switch (req.url) {
    case '/v1/embeddings': {
      const vector = [0.25, -0.5, 0.75];
      const embedding =
        body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return json({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding, ...NEW_FIELD }],
        model: 'text-embedding-3-small',
        usage: { prompt_tokens: 2, total_tokens: 2 },
        ...NEW_FIELD,
      });
    }
    case '/v1/images/generations':
    case '/v1/images/edits':
      return json(images);
    case '/v1/audio/transcriptions':
      if (/name="stream"\r\n\r\ntrue/.test(raw)) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const done = {
          type: 'transcript.text.done',
          text: 'hello',
          usage: { type: 'tokens', input_tokens: 20, output_tokens: 2, total_tokens: 22 },
        };
        return res.end(
          [{ type: 'transcript.text.delta', delta: 'hello' }, done]
            .map((e) => `data: ${JSON.stringify(e)}\n\n`)
            .join(''),
        );
      }
      return verbose
        ? json({
            task: 'transcribe',
            language: 'english',
            duration: 2.5,
            text: 'hello',
            segments: [segment],
            words: [{ word: 'hello', start: 0, end: 0.5 }],
            usage: { type: 'duration', seconds: 3 },
            ...NEW_FIELD,
          })
        : json({
            text: 'hello',
            usage: {
              type: 'tokens',
              input_tokens: 20,
              input_token_details: { audio_tokens: 18, text_tokens: 2 },
              output_tokens: 2,
              total_tokens: 22,
            },
            ...NEW_FIELD,
          });
    case '/v1/audio/translations':
      return verbose
        ? json({ task: 'translate', language: 'english', duration: 2.5, text: 'hello', segments: [segment] })
        : json({ text: 'hello', ...NEW_FIELD });
    case '/v1/realtime/sessions':
      return json({
        id: 'sess_001',
        object: 'realtime.session',
        model: body.model,
        modalities: ['audio', 'text'],
        instructions: '',
        voice: 'verse',
        input_audio_format: 'pcm16',
        output_audio_format: 'pcm16',
        input_audio_transcription: null,
        turn_detection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: 200 },
        tools: [],
        tool_choice: 'auto',
        temperature: 0.8,
        max_response_output_tokens: body.max_response_output_tokens,
        client_secret: { value: 'ek_standin', expires_at: 1_764_000_600 },
        ...NEW_FIELD,
      });
    case '/v1/audio/speech':
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      return res.end('ID3-standin-audio');
    default:
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no ${req.url}` } }));
  }
});
await new Promise<void>((resolve) => openai.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => openai.close(resolve)));
const OPENAI_URL = `http://127.0.0.1:${(openai.address() as AddressInfo).port}/v1`;

describeEachDatabase(
  'the answers against the OpenAPI document',
  (env) => {
    before(async () => {
      const models: Record<string, Record<string, unknown>> = {
        embed: { upstreamModel: 'text-embedding-3-small', pricing: { prompt: 1000 }, outputModalities: ['embedding'] },
        draw: {
          upstreamModel: 'gpt-image-1',
          pricing: { request: 0.01, prompt: 100 },
          imagePrices: { 'low/1024x1024': 0.02 },
          imageTokens: 1000,
          inputModalities: ['text', 'image'],
          outputModalities: ['image'],
        },
        listen: {
          upstreamModel: 'whisper-1',
          pricing: { request: 0.001, second: 0.01 },
          maxPredictSeconds: 600,
          inputModalities: ['audio'],
        },
        voice: { upstreamModel: 'tts-1', pricing: { prompt: 1000, request: 0.001 }, outputModalities: ['audio'] },
        live: { upstreamModel: 'gpt-realtime', pricing: { request: 0.05 }, outputModalities: ['audio'] },
      };
      for (const [name, model] of Object.entries(models))
        await putModel(env, `standin/${name}`, { provider: 'standin', ...model });
    });

    it('answers every OpenAI pass-through operation in the shape the document gives, and hands on a field the upstream added', async () => {
      const document = (await env.request('GET', '/api/openapi.json')).body;
      const user = await fundedUser(env, 100);
      const json = (path: string, body: unknown) => env.request('POST', path, { token: user.key, body });
      const audio = (path: string, fields: Record<string, string> = {}) =>
        postForm(env.baseUrl, path, user.key, {
          model: 'standin/listen',
          ...fields,
          file: new Blob([wavFile(2)], { type: 'audio/wav' }),
        });
      const low = { quality: 'low', size: '1024x1024' };
      const calls: [string, TestResponse][] = [
        ['/api/v1/embeddings', await json('/api/v1/embeddings', { model: 'standin/embed', input: 'hi' })],
        [
          '/api/v1/embeddings',
          await json('/api/v1/embeddings', { model: 'standin/embed', input: ['hi'], encoding_format: 'base64' }),
        ],
        [
          '/api/v1/images/generations',
          await json('/api/v1/images/generations', { model: 'standin/draw', prompt: 'a cat', ...low }),
        ],
        [
          '/api/v1/images/edits',
          await postForm(env.baseUrl, '/api/v1/images/edits', user.key, {
            model: 'standin/draw',
            prompt: 'a hat',
            ...low,
            image: new Blob([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1')], { type: 'image/png' }),
          }),
        ],
        ['/api/v1/audio/transcriptions', await audio('/api/v1/audio/transcriptions')],
        [
          '/api/v1/audio/transcriptions',
          await audio('/api/v1/audio/transcriptions', { response_format: 'verbose_json' }),
        ],
        ['/api/v1/audio/transcriptions', await audio('/api/v1/audio/transcriptions', { response_format: 'text' })],
        ['/api/v1/audio/transcriptions', await audio('/api/v1/audio/transcriptions', { stream: 'true' })],
        ['/api/v1/audio/translations', await audio('/api/v1/audio/translations')],
        ['/api/v1/audio/translations', await audio('/api/v1/audio/translations', { response_format: 'verbose_json' })],
        [
          '/api/v1/realtime/sessions',
          await json('/api/v1/realtime/sessions', { model: 'standin/live', voice: 'verse' }),
        ],
        [
          '/api/v1/audio/speech',
          await json('/api/v1/audio/speech', { model: 'standin/voice', input: 'hi', voice: 'alloy' }),
        ],
      ];
      assert.deepEqual(
        calls.filter(([, response]) => response.status !== 200).map(([path, r]) => `${path} ${r.status} ${r.text}`),
        [],
      );
      assert.deepEqual(
        calls.flatMap(([path, response]) => mismatches(document, 'POST', path, response)),
        [],
      );
      // Nothing serialises these answers with a schema: what the upstream adds reaches the client, at every depth.
      const handedOn = (path: string, i = 0) => calls.filter(([p]) => p === path)[i]![1].body;
      assert.equal(handedOn('/api/v1/embeddings').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/embeddings').data[0].upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/embeddings', 1).data[0].upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/images/generations').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/images/generations').data[0].upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/images/edits').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/audio/transcriptions').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/audio/transcriptions', 1).upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/audio/translations').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/realtime/sessions').upstream_new_field, 'kept');
      assert.equal(handedOn('/api/v1/realtime/sessions').turn_detection.silence_duration_ms, 200);
      assert.equal(handedOn('/api/v1/audio/transcriptions', 2), 'hello');
      assert.match(
        calls.filter(([p]) => p === '/api/v1/audio/transcriptions')[3]![1].headers.get('content-type') ?? '',
        /^text\/event-stream/,
      );
      // Speech is bytes in its format's media type; its `stream_format: "sse"` events are text, not bytes.
      const speech = document.paths['/api/v1/audio/speech'].post.responses['200'].content;
      assert.deepEqual(
        Object.keys(speech).filter((type) => speech[type].schema.format === 'binary'),
        ['audio/mpeg', 'audio/opus', 'audio/aac', 'audio/flac', 'audio/wav', 'audio/pcm'],
      );
      assert.equal(speech['text/event-stream'].schema.type, 'string');
    });

    it("documents the wallet's 402 and the limits' 429 of every billed pass-through with the contract's fields, and answers a 402 as documented", async () => {
      const document = (await env.request('GET', '/api/openapi.json')).body;
      const broke = await fundedUser(env, 0);
      const json = (path: string, body: unknown) => env.request('POST', path, { token: broke.key, body });
      const audio = (path: string) =>
        postForm(env.baseUrl, path, broke.key, {
          model: 'standin/listen',
          file: new Blob([wavFile(2)], { type: 'audio/wav' }),
        });
      const refusals: [string, TestResponse][] = [
        ['/api/v1/embeddings', await json('/api/v1/embeddings', { model: 'standin/embed', input: 'hi' })],
        [
          '/api/v1/images/generations',
          await json('/api/v1/images/generations', {
            model: 'standin/draw',
            prompt: 'a cat',
            quality: 'low',
            size: '1024x1024',
          }),
        ],
        [
          '/api/v1/images/edits',
          await postForm(env.baseUrl, '/api/v1/images/edits', broke.key, {
            model: 'standin/draw',
            prompt: 'a hat',
            quality: 'low',
            size: '1024x1024',
            image: new Blob([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1')], { type: 'image/png' }),
          }),
        ],
        ['/api/v1/audio/transcriptions', await audio('/api/v1/audio/transcriptions')],
        ['/api/v1/audio/translations', await audio('/api/v1/audio/translations')],
        [
          '/api/v1/audio/speech',
          await json('/api/v1/audio/speech', { model: 'standin/voice', input: 'hi', voice: 'alloy' }),
        ],
        ['/api/v1/realtime/sessions', await json('/api/v1/realtime/sessions', { model: 'standin/live' })],
        [
          '/api/v1/realtime/client_secrets',
          await json('/api/v1/realtime/client_secrets', { session: { type: 'realtime', model: 'standin/live' } }),
        ],
      ];
      for (const [path, response] of refusals) {
        assert.equal(response.status, 402, `${path}: ${response.text}`);
        assert.equal(response.body.error.code, 'INSUFFICIENT_CREDITS', path);
        const answers = document.paths[path].post.responses;
        // Listed by status, not left to the generic 4XX: a generated client gets `available`/`required` and
        // `limitType`/`limit`/`current`/`requested`/`resetsAt` typed.
        assert.match(JSON.stringify(answers['402'] ?? null), /required/, path);
        assert.match(JSON.stringify(answers['429'] ?? null), /resetsAt/, path);
      }
      assert.deepEqual(
        refusals.flatMap(([path, response]) => mismatches(document, 'POST', path, response)),
        [],
      );
    });

    it('documents the shape of every 2XX JSON answer, so that generated clients get a type and not unknown', async () => {
      const document = (await env.request('GET', '/api/openapi.json')).body;
      const shapeless: string[] = [];
      for (const [path, methods] of Object.entries<Record<string, any>>(document.paths)) {
        for (const [method, operation] of Object.entries<any>(methods)) {
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
  },
  { config: { providers: [{ name: 'standin', baseUrl: OPENAI_URL }], REALTIME_ENABLED: true } },
);
