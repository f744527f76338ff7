import { invalidParam } from '../infra/errors.js';

/**
 * The `user` argument of an endpoint that needs an end user (run and chat bodies, Human Input form
 * submissions): Dify checks it before the body, with this exact message. Anything but a string is
 * refused, naming the field (Dify would stringify `{"x":1}` into a session id).
 */
export function requireUser(value: unknown): string {
  if (value === undefined || value === null || value === '') throw invalidParam('Arg user must be provided.');
  if (typeof value !== 'string') throw invalidParam('user must be a string');
  return value;
}
