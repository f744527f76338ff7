import { invalidParam } from '../infra/errors.js';

/** The fields of a Human Input form submission, checked. */
export interface FormSubmission {
  readonly inputs: Record<string, unknown>;
  readonly action: string;
}

/**
 * The JSON body of a form submission (`POST /v1/form/human_input/…` and the web-app
 * `POST /api/form/human_input/…`) as an object, with Dify's message otherwise. The route schema
 * (`FormSubmitBody`) only describes it: the checks stay here because their messages
 * ("inputs is required" for a null, "inputs must be an object") and their order (the v1 route
 * checks `user` first, `requireUser`) are not Ajv's.
 */
export function submissionObject(body: unknown): Record<string, unknown> {
  const b = body ?? {};
  if (typeof b !== 'object' || Array.isArray(b)) throw invalidParam('body must be a JSON object');
  return b as Record<string, unknown>;
}

/** `inputs` (an object) and `action` (a string) of a submission, each named when missing or mistyped. */
export function submissionFields(body: Record<string, unknown>): FormSubmission {
  const { inputs, action } = body;
  if (inputs === undefined || inputs === null) throw invalidParam('inputs is required');
  if (typeof inputs !== 'object' || Array.isArray(inputs)) throw invalidParam('inputs must be an object');
  if (action === undefined || action === null) throw invalidParam('action is required');
  if (typeof action !== 'string') throw invalidParam('action must be a string');
  return { inputs: inputs as Record<string, unknown>, action };
}
