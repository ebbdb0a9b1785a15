import { describePattern } from '../platform/http/pattern-rules.ts';

/**
 * A public model id: `<vendor>/<model>` (the model part may hold more slashes: `openrouter/anthropic/claude`).
 * Its own module so that the routes that take ids and the rule of a key's models (`allowed.ts`) share it.
 */
export const MODEL_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*/[^\\s]+$';

/**
 * What a model id that fails {@link MODEL_ID_PATTERN} is told. The commonest mistake is a provider's bare id
 * (`gpt-4o-mini`, `claude-sonnet-4-20250514`): say what to send. A multipart body (transcriptions, image edits),
 * which no route schema validates, says it too.
 */
export const MODEL_ID_RULE =
  'must be "<vendor>/<model>", such as "openai/gpt-4o-mini" or "anthropic/claude-sonnet-4"; GET /api/v1/models lists the models you can use';

describePattern(MODEL_ID_PATTERN, MODEL_ID_RULE);
