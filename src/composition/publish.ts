import type { AppService } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import type { Config } from '../config.js';
import type { Clock } from '../infra/clock.js';
import type { CompletionService } from '../messages/completion-service.js';
import type { ChatflowService } from '../runs/chatflow-service.js';
import type { MessageStore } from '../messages/message-store.js';
import type { ModerationService } from '../moderation/moderation-service.js';
import { McpServerStore } from '../publish/mcp-server-store.js';
import { McpServers } from '../publish/mcp-servers.js';
import { AppAnswers } from '../publish/openai-chat.js';
import type { RunService } from '../runs/run-service.js';
import type { Store } from '../store/db.js';

/** What publishing apps (the OpenAI-compatible endpoint, MCP servers) is built from. */
export interface PublishParts {
  readonly config: Config;
  readonly store: Store;
  readonly clock: Clock;
  readonly apps: AppService;
  readonly completions: CompletionService;
  readonly chatflow: ChatflowService;
  readonly moderation: ModerationService;
  readonly runs: RunService;
  readonly messages: MessageStore;
  readonly endUsers: EndUserService;
}

/** The services that publish apps through other protocols, built once for every route that uses them. */
export interface Publish {
  /** One query of a chat-type or completion app answered for another protocol. */
  readonly appAnswers: AppAnswers;
  /** Apps published as MCP servers. */
  readonly mcpServers: McpServers;
}

export function createPublish(p: PublishParts): Publish {
  const maxFiles = p.config.upload.workflowFileUploadLimit;
  const queueWaitSeconds = p.config.runs.queueWaitSeconds;
  const appAnswers = new AppAnswers({
    completions: p.completions,
    chatflow: p.chatflow,
    moderation: p.moderation,
    runs: p.runs,
    messages: p.messages,
    endUsers: p.endUsers,
    maxFiles,
    queueWaitSeconds,
    conversationMatchWindow: p.config.openaiCompatible.conversationMatchWindow,
  });
  const mcpServers = new McpServers({ store: new McpServerStore(p.store.db), apps: p.apps, answers: appAnswers, runs: p.runs, endUsers: p.endUsers, clock: p.clock, maxFiles, queueWaitSeconds });
  return { appAnswers, mcpServers };
}
