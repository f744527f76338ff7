import { notFound } from '../infra/errors.js';

/** `GET /workflows/run/{id}` (with a period, as Dify). */
export const workflowRunNotFound = () => notFound('Workflow run not found.');
/** `GET /workflow/{id}/events` (no period, as Dify). */
export const workflowRunEventsNotFound = () => notFound('Workflow run not found');
export const conversationNotExists = () => notFound('Conversation Not Exists.');
