import { invalidParam } from '../infra/errors.js';

/** A `user` that is not a string: 400 naming the field (Dify would stringify `{"x":1}` into a session id). */
function notAString(): never {
  throw invalidParam('user must be a string');
}

/**
 * The `user` argument of an endpoint that needs an end user: Dify checks it before the body, with
 * this exact message. Anything but a string is refused.
 */
export function requireUserArg(value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalidParam('Arg user must be provided.');
  return typeof value === 'string' ? value : notAString();
}

/** The `user` of a run or chat body: required, a string. */
export function requireUser(value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalidParam('user is required (Arg user must be provided.)');
  return typeof value === 'string' ? value : notAString();
}
