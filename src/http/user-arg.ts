import { invalidParam } from '../infra/errors.js';

/**
 * The `user` argument of an endpoint that needs an end user: Dify checks it before the body, with
 * this exact message. Non-string JSON values are stringified, as Dify does.
 */
export function requireUserArg(value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalidParam('Arg user must be provided.');
  return typeof value === 'string' ? value : JSON.stringify(value);
}
