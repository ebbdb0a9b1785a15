import fc from 'fast-check';

/**
 * Bad bodies generated from the OpenAPI document: for each operation with a JSON request body, a plausible
 * valid skeleton built from its schema, and fast-check arbitraries that break it — text that is not JSON,
 * values of the wrong type, values far past the schema's bounds, and arbitrary JSON.
 */

/** A JSON Schema as the OpenAPI document carries it (only the keywords the generator reads). */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
}

/** One operation of the document that takes a JSON body. */
export interface JsonOperation {
  method: string;
  /** The OpenAPI path template, `{param}` placeholders included. */
  path: string;
  schema: JsonSchema;
}

/** Every operation of `document` with an `application/json` request body. */
export function jsonOperations(document: any): JsonOperation[] {
  const operations: JsonOperation[] = [];
  for (const [path, methods] of Object.entries<any>(document.paths ?? {})) {
    for (const [method, operation] of Object.entries<any>(methods)) {
      const schema = operation?.requestBody?.content?.['application/json']?.schema;
      if (schema) operations.push({ method: method.toUpperCase(), path, schema });
    }
  }
  return operations;
}

/** Strings tried, in order, against a `pattern` for the skeleton. */
const PATTERN_CANDIDATES = [
  'chaos',
  'chaos@example.com',
  'chaos/model',
  'https://example.com/callback',
  'openai',
  'x',
  'a1',
];

function typeOf(schema: JsonSchema): string | undefined {
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== 'null') ?? schema.type[0];
  if (schema.type) return schema.type;
  if (schema.properties) return 'object';
  return undefined;
}

/** A value that satisfies `schema` as far as a simple reading of it allows (enough to get past validation often). */
export function skeleton(schema: JsonSchema, depth = 0): unknown {
  if (depth > 8) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.allOf?.length) {
    const parts = schema.allOf.map((part) => skeleton(part, depth + 1));
    return parts.every((p) => p && typeof p === 'object' && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives?.length) return skeleton(alternatives.find((a) => a.type !== 'null') ?? alternatives[0], depth + 1);
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  switch (typeOf(schema)) {
    case 'object': {
      const value: Record<string, unknown> = {};
      for (const name of schema.required ?? []) value[name] = skeleton(schema.properties?.[name] ?? {}, depth + 1);
      return value;
    }
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => skeleton(schema.items ?? {}, depth + 1));
    case 'string': {
      if (schema.format === 'email') return 'chaos@example.com';
      if (schema.format === 'uri') return 'https://example.com/callback';
      const pattern = schema.pattern ? new RegExp(schema.pattern, 'u') : null;
      const text = PATTERN_CANDIDATES.find((candidate) => !pattern || pattern.test(candidate)) ?? 'chaos';
      return text.padEnd(schema.minLength ?? 0, 'x');
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return 'chaos';
  }
}

/** The paths (property names from the root) of every value in `value`, the root included. */
function pathsOf(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const paths = [prefix];
  if (Array.isArray(value)) value.forEach((item, i) => paths.push(...pathsOf(item, [...prefix, i])));
  else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) paths.push(...pathsOf(item, [...prefix, key]));
  return paths;
}

/** `value` with the node at `path` replaced (a deep copy; the root path replaces the whole value). */
function replaceAt(value: unknown, path: Array<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) };
  copy[path[0]] = replaceAt(copy[path[0]], path.slice(1), replacement);
  return copy;
}

/** Values of the wrong type for most fields, and numbers at the edges of what JSON and int8 columns hold. */
const wrongValue = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    -0.000_000_1,
    1e308,
    -1e308,
    2 ** 53,
    2 ** 63,
    -(2 ** 63),
    '',
    ' ',
    '0',
    'true',
    'null',
    [],
    [[]],
    {},
    { $gt: '' },
    JSON.parse('{"__proto__":{"polluted":true}}'),
    '\u0000',
    '\ud800',
    '💸'.repeat(10),
  ),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.string({ maxLength: 20 }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** Values far past any sensible bound: long strings, long arrays, deep nesting. */
const oversizedValue = fc.oneof(
  fc.integer({ min: 10_000, max: 300_000 }).map((length) => 'x'.repeat(length)),
  fc.integer({ min: 1_000, max: 20_000 }).map((length) => Array.from({ length }, (_, i) => i)),
  fc.integer({ min: 100, max: 2_000 }).map((depth) => {
    let nested: unknown = 'deep';
    for (let i = 0; i < depth; i++) nested = { a: nested };
    return nested;
  }),
  fc
    .integer({ min: 1_000, max: 5_000 })
    .map((keys) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i]))),
);

/** Text that is not JSON, or is JSON cut short. */
function malformedText(valid: string) {
  return fc.oneof(
    fc.constantFrom(
      '',
      '{',
      '}',
      '[',
      'nul',
      'undefined',
      "{'a':1}",
      '{"a":1,}',
      '{"a":}',
      '{"a" 1}',
      '"unterminated',
      '\u0000',
      '\ufeff{}',
      'NaN',
      '{"a":NaN}',
      '[1,2',
      '{}{}',
      '{"__proto__":{"polluted":true}}',
      '['.repeat(5_000),
      '{"a":'.repeat(2_000),
    ),
    fc.string({ maxLength: 200 }),
    fc.nat({ max: Math.max(0, valid.length - 1) }).map((cut) => valid.slice(0, cut)),
  );
}

/** One generated request body: the exact text sent and its content type. */
export interface GeneratedBody {
  kind: 'malformed' | 'wrong-type' | 'oversized' | 'arbitrary' | 'skeleton';
  text: string;
  contentType: string;
}

/** Arbitrary bad (and occasionally valid) bodies for an operation's schema. */
export function bodiesFor(schema: JsonSchema): fc.Arbitrary<GeneratedBody> {
  const base = skeleton(schema);
  const baseText = JSON.stringify(base);
  const paths = pathsOf(base);
  const mutated = (values: fc.Arbitrary<unknown>) =>
    fc.tuple(fc.constantFrom(...paths), values, fc.boolean()).map(([path, value, asNewField]) => {
      // Either a known field gets the bad value, or an unknown field is added beside the known ones.
      if (asNewField && base && typeof base === 'object' && !Array.isArray(base))
        return JSON.stringify({ ...(base as object), chaosExtra: value });
      return JSON.stringify(replaceAt(base, path, value));
    });
  const contentType = fc.constantFrom(
    'application/json',
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
  );
  return fc.oneof(
    fc
      .tuple(malformedText(baseText), contentType)
      .map(([text, type]) => ({ kind: 'malformed' as const, text, contentType: type })),
    mutated(wrongValue).map((text) => ({ kind: 'wrong-type' as const, text, contentType: 'application/json' })),
    mutated(oversizedValue).map((text) => ({ kind: 'oversized' as const, text, contentType: 'application/json' })),
    fc.jsonValue({ maxDepth: 3 }).map((value) => ({
      kind: 'arbitrary' as const,
      text: JSON.stringify(value) ?? 'null',
      contentType: 'application/json',
    })),
    fc.constant({ kind: 'skeleton' as const, text: baseText, contentType: 'application/json' }),
  );
}
