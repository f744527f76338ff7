import type { FastifyInstance } from 'fastify';
import { invalidParam } from '../infra/errors.js';

/**
 * The first top-level field (or `body`, for a body that is itself a deep array) whose value nests
 * arrays and objects more than `max` levels deep, or undefined. Iterative: a body of any depth is
 * measured without recursion.
 */
export function tooDeepField(value: unknown, max: number): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const roots: [string, unknown][] = Array.isArray(value) ? [['body', value]] : Object.entries(value).map(([k, v]) => [k, v]);
  // the body itself is level 1; an object body's fields start at level 2
  const base = Array.isArray(value) ? 0 : 1;
  for (const [field, root] of roots) {
    const stack: [unknown, number][] = [[root, base + 1]];
    for (let item = stack.pop(); item; item = stack.pop()) {
      const [v, depth] = item;
      if (typeof v !== 'object' || v === null) continue;
      if (depth > max) return field;
      for (const child of Array.isArray(v) ? v : Object.values(v)) {
        if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
      }
    }
  }
  return undefined;
}

/**
 * Replaces Fastify's `application/json` parser with the same parser (prototype poisoning refused)
 * followed by a depth check: a body nested more than `REQUEST_MAX_JSON_DEPTH` levels is a 400
 * `invalid_param` naming the top-level field, before any route sees it (deep values overflow the
 * stack of the recursive code that handles them later: serialisation, cloning, templates).
 */
export function limitJsonDepth(app: FastifyInstance, max: number, opts: { emptyIsNone?: boolean } = {}): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // `emptyIsNone` (the web app's API): an empty body is no body, as Dify's web controllers read it
    if (opts.emptyIsNone && String(body) === '') return done(null, undefined);
    parse(request, String(body), (err, value) => {
      if (err) return done(err, undefined);
      const field = tooDeepField(value, max);
      if (field !== undefined) return done(invalidParam(`${field} is nested more than REQUEST_MAX_JSON_DEPTH (${max}) levels deep`), undefined);
      done(null, value);
    });
  });
}
