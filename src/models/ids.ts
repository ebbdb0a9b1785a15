/**
 * A public model id: `<vendor>/<model>` (the model part may hold more slashes: `openrouter/anthropic/claude`).
 * Its own module so that the routes that take ids and the rule of a key's models (`allowed.ts`) share it.
 */
export const MODEL_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*/[^\\s]+$';
