import { defineError, notFound } from '../infra/errors.js';

export const formNotFound = () => notFound('Form not found');
export const formSubmitted = defineError(
  'human_input_form_submitted',
  412,
  (formId: string) => `This form has already been submitted by another user, form_id=${formId}`,
);
export const formExpired = defineError('human_input_form_expired', 412, (formId: string) => `This form has expired, form_id=${formId}`);
export const invalidFormData = defineError('invalid_form_data', 400, (message: string) => message);
export const webFormRateLimited = defineError(
  'web_form_rate_limit_exceeded',
  429,
  (max: number, windowSeconds: number) =>
    `Too many form requests from this address: at most ${max} per ${windowSeconds} seconds (WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS, WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS). Please try again later.`,
  (_max: number, windowSeconds: number) => ({ 'retry-after': String(windowSeconds) }),
);
