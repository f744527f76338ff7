import type { App } from '../apps/app-service.js';
import { validateInputs } from '../apps/input-form.js';
import { checkRequestFiles } from '../apps/file-upload-rules.js';
import type { ModerationService } from '../moderation/moderation-service.js';
import type { AnnotationAnswer, ChatflowMessage, ChatflowService, DirectAnswer } from './chatflow-service.js';

/** What starting a chatflow answer needs. */
export interface ChatflowAnswerDeps {
  readonly chatflow: ChatflowService;
  readonly moderation: ModerationService;
  /** `WORKFLOW_FILE_UPLOAD_LIMIT`: most files per input and per request. */
  readonly maxFiles: number;
}

/** One query to a chatflow app, as a caller sends it (`POST /chat-messages`, the OpenAI-compatible endpoint, MCP). */
export interface ChatflowAsk {
  readonly app: App;
  readonly user: string;
  /** The caller's end user, created on first use. */
  readonly endUser: () => Promise<{ readonly id: string }>;
  readonly query: string;
  readonly inputs: Record<string, unknown>;
  /** Blank or absent: a new conversation. */
  readonly conversationId: string | undefined;
  readonly files: readonly unknown[];
}

/** A chatflow answer: given at once (an annotation, input moderation's preset) or a started run. */
export type ChatflowStart =
  | { readonly type: 'direct'; readonly answer: DirectAnswer | AnnotationAnswer }
  | { readonly type: 'run'; readonly message: ChatflowMessage };

/**
 * Dify's advanced-chat runner up to the graph: the inputs checked (a continued conversation keeps
 * the inputs it started with: later inputs are ignored, as Dify), input moderation (its preset
 * response answers with no run), annotation reply, then the workflow run.
 */
export async function startChatflowAnswer(deps: ChatflowAnswerDeps, ask: ChatflowAsk): Promise<ChatflowStart> {
  const { app: a } = ask;
  const continuing = Boolean(ask.conversationId?.trim());
  const inputs = continuing ? {} : validateInputs(a.inputs, ask.inputs, deps.maxFiles);
  checkRequestFiles(a, ask.files, deps.maxFiles);
  const endUser = await ask.endUser();
  const request = { app: a, endUserId: endUser.id, query: ask.query, inputs, conversationId: ask.conversationId, files: ask.files };
  let query = ask.query;
  let runInputs = inputs;
  if (deps.moderation.enabled(a)) {
    const gate = await deps.moderation.checkInputs(a, await deps.chatflow.inputsFor(request), ask.query);
    if (gate.type === 'direct') return { type: 'direct', answer: await deps.chatflow.answerDirectly(request, gate.answer) };
    query = gate.query;
    if (!continuing) runInputs = gate.inputs;
  }
  const annotated = await deps.chatflow.answerFromAnnotation({ ...request, query });
  if (annotated) return { type: 'direct', answer: annotated };
  const message = await deps.chatflow.send({ app: a, endUserId: endUser.id, user: ask.user, query, inputs: runInputs, conversationId: ask.conversationId, files: ask.files });
  return { type: 'run', message };
}
