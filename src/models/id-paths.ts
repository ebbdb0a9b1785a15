import Type, { type TObject } from 'typebox';
import { describePattern } from '../platform/http/pattern-rules.ts';

/** A model id's vendor, its first segment. */
const VENDOR_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*$';
/** What follows the vendor: one or more segments (Groq's, Together's and vLLM's ids hold slashes), none empty. */
const MODEL_NAME_PATTERN = '^[^\\s/]+(/[^\\s/]+)*$';
/** A whole model id as a path names it in one segment, its slashes as `%2F`. */
const PATH_MODEL_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*(/[^\\s/]+)+$';

describePattern(
  MODEL_NAME_PATTERN,
  'must be the model\'s name after its vendor ("gpt-4o-mini", "meta-llama/llama-3"): no spaces and no empty part between slashes',
);
describePattern(
  PATH_MODEL_ID_PATTERN,
  'must be a model id "<vendor>/<model>" ("openai/meta-llama/llama-3"): no spaces and no empty part between slashes',
);

/** One shape of a path that names a model, and how to read the id back from its parameters. */
export interface ModelPath {
  url: string;
  /** Left out of the OpenAPI document: the same operation as a documented shape. */
  hide: boolean;
  params: TObject;
  /** Puts the parameters in the shape `params` describes before they are validated. */
  preValidation?: (request: { params: unknown }) => Promise<void>;
  idOf(params: unknown): string;
}

/**
 * The paths under `base` that name one model: `<base>/:vendor/:model` (the model part may hold `%2F`),
 * `<base>/:vendor/*` for an id of more segments written as they are (`openai/meta-llama/llama-3`: a route
 * parameter stops at a slash), and `<base>/:id` for the id URL-encoded in one segment, as the OpenAI SDK's
 * `models.retrieve` sends it. Register the same handler on each. Only the first is documented, and the third
 * when `documentEncoded`.
 *
 * The wildcard is the router's last resort, so a sub-resource with a fixed last segment under
 * `<base>/:vendor/:model/` (predictions) keeps its route, for the methods it has.
 *
 * `checked`: the parameters must have an id's shape (a 400 says which); else any text is looked up.
 */
export function modelPaths(base: string, options: { checked: boolean; documentEncoded: boolean }): ModelPath[] {
  const checked = (pattern: string) => (options.checked ? { pattern } : {});
  const split = Type.Object({
    vendor: Type.String({
      maxLength: 100,
      description: "The model id's vendor (its first segment)",
      ...checked(VENDOR_PATTERN),
    }),
    model: Type.String({
      maxLength: 300,
      description:
        'The rest of the model id; it may hold more slashes (`meta-llama/llama-3`), written as they are or as `%2F`',
      ...checked(MODEL_NAME_PATTERN),
    }),
  });
  const joined = (params: unknown) => {
    const { vendor, model } = params as { vendor: string; model: string };
    return `${vendor}/${model}`;
  };
  return [
    { url: `${base}/:vendor/:model`, hide: false, params: split, idOf: joined },
    {
      url: `${base}/:vendor/*`,
      hide: true,
      params: split,
      // The router names the rest `*`: as `model`, one schema and one name in a 400 for both shapes.
      preValidation: async (request) => {
        const params = request.params as { vendor: string; '*': string };
        request.params = { vendor: params.vendor, model: params['*'] };
      },
      idOf: joined,
    },
    {
      url: `${base}/:id`,
      hide: !options.documentEncoded,
      params: Type.Object({
        id: Type.String({
          maxLength: 400,
          description: 'The model id `<vendor>/<model>`, URL-encoded.',
          ...checked(PATH_MODEL_ID_PATTERN),
        }),
      }),
      idOf: (params) => (params as { id: string }).id,
    },
  ];
}
