import { errors } from '../errors.ts';

/**
 * A 400 naming the first field of `body` that is not one of `fields` (`Unknown field "limits.bogus"; limits takes
 * daily, monthly, total`), with that field as `param`: the validator says only "must NOT have additional
 * properties", which leaves the caller to guess which. Run it before the route's schema errors are thrown (the
 * route validates with `attachValidation`). `where`: the object's path in the body (empty for the body itself);
 * `holder`: how the refusal names what takes the fields ("a key", "limits").
 */
export function refuseUnknownFields(
  body: Record<string, unknown>,
  fields: readonly string[],
  holder: string,
  where = '',
): void {
  const unknown = Object.keys(body).find((field) => !fields.includes(field));
  if (unknown === undefined) return;
  const param = where ? `${where}.${unknown}` : unknown;
  throw errors.invalid(`Unknown field ${JSON.stringify(param)}; ${holder} takes ${fields.join(', ')}`, { param });
}
