/**
 * Fills `\u0000name\u0000` markers in a prompt with `values[name]` (the place Python's
 * `str.format` put them). Values are inserted as they are: no `$` patterns, no second pass.
 */
export function fill(template: string, values: Readonly<Record<string, string>>): string {
  // NUL marks the placeholders on purpose: no user text can contain it
  // eslint-disable-next-line no-control-regex
  return template.replace(/\u0000([a-z_]+)\u0000/g, (_m, name: string) => values[name] ?? '');
}
