import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import { ApiError } from '../../platform/errors.ts';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { ResponsesDeps } from './deps.ts';
import type { InputItem } from './parse.ts';
import { ResponseIdParams } from './schemas.ts';
import { requireResponse } from './store.ts';

const InputItemsQuery = Type.Object({
  limit: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Items to list, 1 to 100 (default 20).' }),
  ),
  order: Type.Optional(
    Type.Union([Type.Literal('asc'), Type.Literal('desc')], {
      description: '`desc` (default): the newest item first; `asc`: the conversation in order.',
    }),
  ),
  after: Type.Optional(Type.String({ maxLength: 200, description: 'An item id: list the items after it.' })),
});

const InputItemList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Object({ id: Type.String(), type: Type.String() }, { additionalProperties: true })),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
});

/** Id prefixes of input items by type, as OpenAI's own ids start. */
const PREFIX: Record<string, string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
};

/**
 * An input item as OpenAI lists it: with an `id` (the client's, or one derived from the response and the
 * item's place in the conversation, so the same item keeps the same id on every read) and a message's text
 * as `input_text` parts.
 */
export function listedItem(item: InputItem, responseId: string, index: number): Record<string, unknown> {
  const listed: Record<string, unknown> = { ...item };
  const type = typeof item.type === 'string' ? item.type : 'message';
  listed.type = type;
  if (typeof listed.id !== 'string')
    listed.id = `${PREFIX[type] ?? 'item'}_${responseId.slice('resp_'.length)}_in${index}`;
  if (type === 'message' && typeof item.content === 'string')
    listed.content = [{ type: item.role === 'assistant' ? 'output_text' : 'input_text', text: item.content }];
  return listed;
}

/**
 * `GET /api/v1/responses/:id/input_items`: the conversation a stored response answered (the previous
 * responses' items included), paged by item id. Security invariant: the same ownership as retrieve, through
 * `requireResponse` (another user's or app's response is a 404).
 */
export function registerInputItemsRoute(app: App, ctx: ResponsesDeps): void {
  app.get(
    '/api/v1/responses/:id/input_items',
    {
      schema: {
        tags: ['ai'],
        summary: "List a stored response's input items (OpenAI Responses; only those created with `store: true`)",
        security: [{ bearer: [] }],
        params: ResponseIdParams,
        querystring: InputItemsQuery,
        response: { 200: InputItemList, 400: ApiErrorSchema, 404: ApiErrorSchema },
      },
      config: { auth: ['ai:chat', 'ai:completions'] },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const query = request.query as { limit?: string; order?: 'asc' | 'desc'; after?: string };
      const stored = await requireResponse(ctx, principalOf(request), id);
      const items = stored.inputItems.map((item, index) => listedItem(item, id, index));
      if (query.order !== 'asc') items.reverse();
      let start = 0;
      if (query.after !== undefined) {
        start = items.findIndex((item) => item.id === query.after) + 1;
        if (start === 0)
          throw new ApiError('INVALID_REQUEST', `"after" names no input item of response "${id}".`, {
            details: { param: 'after' },
          });
      }
      const limit = Number(query.limit ?? 20);
      const data = items.slice(start, start + limit) as Array<{ id: string; type: string }>;
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: start + limit < items.length,
      };
    },
  );
}
