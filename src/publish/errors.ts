import { defineError } from '../infra/errors.js';

/**
 * A chatflow run reached through the OpenAI-compatible endpoint or MCP that paused for a Human
 * Input form: neither protocol can carry the form, the run waits for it.
 */
export const runPaused = defineError(
  'run_paused',
  409,
  (runId: string) =>
    `The run paused for a Human Input form (workflow_run_id ${runId}); this endpoint cannot answer a form. Submit it (POST /v1/form/human_input/{form_token}) and follow the run with GET /v1/workflow/${runId}/events.`,
);
/** The OpenAI-compatible endpoint reached by an app of a mode it does not serve. */
export const notChatCompletionApp = defineError(
  'not_chat_completion_app',
  400,
  (mode: string) => `POST /v1/chat/completions serves chat, agent-chat, advanced-chat (chatflow) and completion apps; this app's mode is ${mode}. Run a workflow app with POST /v1/workflows/run.`,
);
