import { defineError } from '../infra/errors.js';

export const appUnavailable = defineError(
  'app_unavailable',
  400,
  () => 'App unavailable, please check your app configurations.',
);
export const notChatApp = defineError('not_chat_app', 400, () => 'Please check if your app mode matches the right API route.');
export const notWorkflowApp = defineError('not_workflow_app', 400, () => 'Please check if your app mode matches the right API route.');

/** A DSL file that cannot be imported; the message names the path inside the document. */
export class DslError extends Error {
  override name = 'DslError';
}
export const notCompletionApp = defineError('not_completion_app', 400, () => 'Please check if your Completion app mode matches the right API route.');
export const moreLikeThisDisabled = defineError('app_more_like_this_disabled', 403, () => "The 'More like this' feature is disabled. Please refresh your page.");
