import type { Runtime } from '../../runtime.js';
import { invalidParam } from '../../infra/errors.js';
import { toSeconds } from '../../infra/clock.js';
import { chatMetadata, replyWithGeneration } from '../routes/completion.js';
import type { ChatGenerator, ChatGenerators, ChatStopper, ChatStoppers } from './chat-request.js';
import { chatflowGenerator, chatflowStopper, type ChatflowGeneratorDeps } from './chatflow-generator.js';

/** The runtime members the chat generators use. */
export type ChatGeneratorDeps = Pick<Runtime, 'completions'> & ChatflowGeneratorDeps;

/**
 * `POST /chat-messages` for a chat or agent-chat app: a model generation, blocking or streamed.
 * Dify's AgentChatAppGenerator answers only streaming requests (a ValueError: 400 invalid_param),
 * before anything else.
 */
function modelChatGenerator(runtime: Pick<Runtime, 'completions' | 'config'>, agent: boolean): ChatGenerator {
  return async ({ app: a, user, body, streaming, reply }) => {
    if (agent && body.response_mode !== 'streaming') throw invalidParam('Agent Chat App does not support blocking mode');
    const input = { app: a, user, inputs: body.inputs, query: body.query, files: body.files ?? null, conversationId: body.conversation_id ?? undefined };
    return replyWithGeneration(
      reply,
      runtime,
      streaming,
      (sink) => runtime.completions.startChat(input, sink),
      (run, outcome) => ({
        event: 'message',
        task_id: run.taskId,
        id: run.messageId,
        message_id: run.messageId,
        conversation_id: run.conversationId,
        mode: 'chat',
        answer: outcome.answer,
        metadata: chatMetadata(outcome),
        created_at: toSeconds(run.createdAt),
      }),
    );
  };
}

/** Stopping a chat or agent-chat generation (the completion service checks the task's user). */
function modelChatStopper(runtime: Pick<Runtime, 'completions'>, mode: 'chat' | 'agent-chat'): ChatStopper {
  return ({ app: a, user, taskId }) => runtime.completions.stop(a, taskId, user, mode);
}

/** The `POST /chat-messages` generator of each chat-family mode (completion and workflow apps have none). */
export function chatGenerators(runtime: ChatGeneratorDeps): ChatGenerators {
  return {
    chat: modelChatGenerator(runtime, false),
    'agent-chat': modelChatGenerator(runtime, true),
    'advanced-chat': chatflowGenerator(runtime),
  };
}

/** The `POST /chat-messages/{task_id}/stop` of each chat-family mode. */
export function chatStoppers(runtime: ChatGeneratorDeps): ChatStoppers {
  return {
    chat: modelChatStopper(runtime, 'chat'),
    'agent-chat': modelChatStopper(runtime, 'agent-chat'),
    'advanced-chat': chatflowStopper(runtime),
  };
}
