/**
 * What a string pattern of a schema means, in words a person can act on: a value that fails a pattern is
 * otherwise refused with the validator's "must match pattern \"^…$\"", a regular expression most callers cannot
 * read. The feature that owns a pattern describes it here once; every route whose schema uses it then says so.
 */
const rules = new Map<string, string>();

/** Says `rule` (e.g. `must be "<vendor>/<model>"…`) for every value that fails `pattern`. */
export function describePattern(pattern: string, rule: string): void {
  rules.set(pattern, rule);
}

/** The rule described for `pattern`, if any. */
export function patternRule(pattern: unknown): string | undefined {
  return typeof pattern === 'string' ? rules.get(pattern) : undefined;
}
