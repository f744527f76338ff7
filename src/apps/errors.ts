import { defineError } from '../infra/errors.js';

export const appUnavailable = defineError(
  'app_unavailable',
  400,
  (detail?: string) => detail ?? 'App unavailable, please check your app configurations.',
);
export const notChatApp = defineError('not_chat_app', 400, () => 'Please check if your app mode matches the right API route.');
export const notWorkflowApp = defineError('not_workflow_app', 400, () => 'Please check if your app mode matches the right API route.');

/** A DSL file that cannot be imported; the message names the path inside the document. */
export class DslError extends Error {
  override name = 'DslError';
}
