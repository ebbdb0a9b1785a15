/**
 * Tool fields that a translated call can leave out only at the value that changes nothing (the behaviour of a tool
 * without the field); another value asks for something the gateway does not run, so it is refused by name rather
 * than dropped. Shared by the protocols whose tools carry such switches (Anthropic Messages, OpenAI Responses).
 */

/** A switch: when leaving it out changes nothing, and why another value is refused. */
export interface DefaultedToolField {
  harmless: (value: unknown) => boolean;
  why: string;
}

/** `defer_loading`, `async`: off is what a tool without the field does. */
export const isOff = (value: unknown): boolean => value === false;

/** `allowed_callers`: only the model calls tools here (programmatic calling needs code execution, refused). */
export const modelCallsOnly = (value: unknown): boolean =>
  Array.isArray(value) && value.length > 0 && value.every((caller) => caller === 'direct');
