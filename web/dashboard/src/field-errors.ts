/**
 * A form's refusals in the form's own words. The API names the field at fault in its terms (`limits.monthly`,
 * `url`, `models[0]`): in the envelope's `param` when it gives one, else at the start of its sentence (the
 * schema's "Invalid body: limits/daily must be >= 0", a route's "limit must be …"), else only by its code
 * (WEBHOOK_URL_REFUSED). A form lists its fields with the labels the user sees; a refusal that names one of them
 * is shown next to that field, reworded with the label, instead of as a sentence about words never on the form.
 */
import { ApiFailure } from './api.ts';

/** One field of a form: the label the user reads, and how the API may name it when it refuses the request. */
export interface FieldSpec {
  /** The label's words as a sentence can start with them ("Spending limit", "Endpoint URL"). */
  label: string;
  /** The API's names of the field, dotted (`limits.daily`); default the input's name. */
  api?: string[];
  /** Error codes that can only be about this field. */
  codes?: string[];
  /** What a refusal's sentence says when it is about this field, for the API's answers that name no field. */
  mentions?: RegExp;
}

/** A form's fields, by the `name` of their inputs. */
export type FormFields = Record<string, FieldSpec>;

/** A refusal placed at one field: the input's name and the sentence to show beside it. */
export interface FieldError {
  field: string;
  message: string;
}

// The request field a sentence starts with: `name`, `limits/daily`, `limits.monthly`, `models[0]`.
const LEADING_PATH = /^(?:Invalid body: )?((?:body\/)?[A-Za-z_]\w*(?:(?:[./][A-Za-z_]\w*)|\[\d+\])*)(?=\s|:|$)/;

/** `body/limits/daily`, `models[0]` → `limits.daily`, `models`. */
function dotted(path: string): string {
  return path
    .replace(/^body\//, '')
    .replace(/\[\d+\]/g, '')
    .replace(/\//g, '.');
}

/**
 * The rest of a schema sentence, in plain words: ajv's `anyOf` noise after the first reason dropped
 * ("must be >= 0, body/limit must be null, …", or the API's own ", or null": an empty field is that null), its
 * symbols and capitals turned into words.
 */
function plain(rest: string): string {
  const first = rest
    .split(/, body\//)[0]!
    .replace(/, or null$/, '')
    .trim();
  const worded = first
    .replace(/must be >= (\S+)/, 'must be $1 or more')
    .replace(/must be <= (\S+)/, 'must be $1 or less')
    .replace(/must NOT have more than (\d+) characters/, 'must be at most $1 characters long')
    .replace(/must NOT have fewer than 1 items/, 'needs at least one chosen')
    .replace(/must NOT have fewer than (\d+) items/, 'needs at least $1 chosen');
  return /[.!?]$/.test(worded) ? worded : `${worded}.`;
}

/**
 * The field of `fields` that the API's path names (`limits.daily`, or deeper, `jwks.keys[0]`), with the API's
 * name that matched.
 */
function fieldAt(path: string, fields: FormFields): [string, FieldSpec, string] | null {
  const plainPath = dotted(path);
  for (const [name, spec] of Object.entries(fields))
    for (const apiName of spec.api ?? [name])
      if (plainPath === apiName || plainPath.startsWith(`${apiName}.`)) return [name, spec, apiName];
  return null;
}

/** Where `failure` belongs among `fields`, or null when it is about none of them (then the form shows it whole). */
export function fieldErrorOf(failure: unknown, fields: FormFields): FieldError | null {
  if (!(failure instanceof ApiFailure) || failure.status !== 400) return null;
  const leading = LEADING_PATH.exec(failure.message)?.[1];
  for (const path of [failure.param, leading]) {
    const hit = path ? fieldAt(path, fields) : null;
    if (hit) return { field: hit[0], message: worded(failure.message, hit[1].label, path!, hit[2]) };
  }
  const entries = Object.entries(fields);
  const byCode = entries.find(([, spec]) => failure.code !== undefined && spec.codes?.includes(failure.code));
  if (byCode) return { field: byCode[0], message: failure.message };
  const byWords = entries.find(([, spec]) => spec.mentions?.test(failure.message));
  return byWords ? { field: byWords[0], message: failure.message } : null;
}

/**
 * The API's sentence with its name of the field replaced by the form's label, when the sentence starts with it;
 * a part of the field (`jwks.keys[0]`: its first key) is kept after the label, an entry's index (`models[0]`,
 * whose value the sentence quotes) is not.
 */
function worded(message: string, label: string, apiPath: string, apiName: string): string {
  const body = message.replace(/^Invalid body: /, '');
  // A schema refusal's `param` is dotted (`limits.daily`, `messages[0].role`), its sentence the validator's path.
  const slashed = apiPath.replace(/\[(\d+)\]/g, '/$1').replace(/\./g, '/');
  const start = [apiPath, slashed].find((path) => body.startsWith(path));
  if (start === undefined) return message;
  const part = apiPath
    .replace(/^body\//, '')
    .replace(/\//g, '.')
    .slice(apiName.length)
    .replace(/^\./, '');
  const named = part === '' || /^\[\d+\]$/.test(part) ? label : `${label} (${part})`;
  const rest = plain(body.slice(start.length).replace(/^:?\s*/, ''));
  // A quoted value first (`models[0] "x" is not …`) reads as the field's entry: "Models: "x" is not …".
  return rest.startsWith('"') ? `${named}: ${rest}` : `${named} ${rest}`;
}
