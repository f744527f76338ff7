import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import type { Config } from '../config.js';
import type { UploadService } from '../files/upload-service.js';
import type { ActiveRequestLimiter } from '../infra/active-requests.js';
import type { Clock } from '../infra/clock.js';
import type { ServiceError } from '../infra/errors.js';
import type { Logger } from '../infra/logger.js';
import type { ContentPart, ModelProvider, ModelProviders } from '../llm/model-provider.js';
import type { UsageBody } from '../llm/usage.js';
import type { TextOffload } from '../text/offload.js';
import type { ToolRuntime } from '../tools/tool.js';
import type { AnnotationReplier, AnnotationReplyInfo } from './annotation-answer.js';
import type { AgentThoughtStore } from './agent-thoughts.js';
import type { MessageLeases } from './message-leases.js';
import type { MessageStatus, MessageStore } from './message-store.js';
import type { TaskRegistry } from './task-registry.js';
import type { ModerationService } from '../moderation/moderation-service.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';
import type { AppDatasetRetrieval } from './dataset-retrieval.js';

export interface CompletionInput {
  readonly app: App;
  /** The caller's `user`; required. */
  readonly user: string | undefined;
  readonly inputs: unknown;
  readonly query: string;
  readonly files: readonly unknown[] | null;
}

/**
 * What a generation emits as it goes; the HTTP layer shapes these into Dify's events. `sent` (no
 * wire event) says the model request is on its way: a stream opens then.
 */
export type CompletionEvent =
  | { readonly type: 'sent' }
  /** `agent`: text of an agent-chat app's agent loop (Dify's `agent_message`). */
  | { readonly type: 'message'; readonly text: string; readonly agent?: boolean }
  /** Agent-chat apps: a round of the agent loop started or changed (Dify's `agent_thought`). */
  | { readonly type: 'thought'; readonly thought: Readonly<Record<string, unknown>> }
  /** Output moderation replaced the answer so far with `text` (Dify's `message_replace`, `reason` `output_moderation`). */
  | { readonly type: 'replace'; readonly text: string; readonly reason: string }
  | { readonly type: 'end'; readonly outcome: CompletionOutcome };

export interface CompletionOutcome {
  readonly status: Exclude<MessageStatus, 'running'>;
  readonly answer: string;
  readonly usage: UsageBody;
  /** Set when `status` is `error`. */
  readonly error: ServiceError | undefined;
  /** Dify's `metadata.annotation_reply`, set when an annotation answered instead of the model. */
  readonly annotationReply?: AnnotationReplyInfo;
  /** The answer's citations (`metadata.retriever_resources`), when the app shows them. */
  readonly retrieverResources?: readonly RetrieverResource[];
}


/** A started generation. It runs to its end whether or not anyone is listening. */
export interface CompletionRun {
  readonly taskId: string;
  readonly messageId: string;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Resolves once the message is stored with its final answer; never rejects. */
  readonly done: Promise<CompletionOutcome>;
}

export type CompletionSink = (event: CompletionEvent) => void;

export interface ChatInput extends CompletionInput {
  /** Blank or absent: a new conversation. */
  readonly conversationId: string | undefined;
}

export interface ChatRun extends CompletionRun {
  readonly conversationId: string;
}

/** The caller's conversation or 404 (the chatflow service answers it for every chat app). */
export interface ConversationLookup {
  conversation(appId: string, endUserId: string, id: string): Promise<{ readonly id: string; readonly inputs: Record<string, unknown> }>;
}

export interface Prepared {
  readonly app: App;
  readonly startedAt: number;
  readonly inputs: Record<string, unknown>;
  readonly model: ModelSettings;
  readonly provider: ModelProvider;
  readonly images: ContentPart[];
  readonly endUserId: string;
  /** The caller's `user` string. */
  readonly user: string;
  readonly prePrompt: string;
  readonly query: string;
  readonly files: readonly unknown[];
}

export interface CompletionDeps {
  readonly config: Config;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly providers: ModelProviders;
  readonly messages: MessageStore;
  readonly endUsers: EndUserService;
  readonly uploads: UploadService;
  readonly tasks: TaskRegistry;
  readonly activeRequests: ActiveRequestLimiter;
  readonly conversations: ConversationLookup;
  readonly annotations: AnnotationReplier;
  /** Token counting (usage when the provider reports none, history) off the event loop for large texts. */
  readonly offload: TextOffload;
  /** The tools agent-chat apps call; unset: an agent-chat app with tools fails naming them. */
  readonly tools?: ToolRuntime;
  /** Where agent-chat answers keep their agent thoughts. */
  readonly thoughts: AgentThoughtStore;
  /** Saves the answers in progress and keeps their messages' heartbeats. */
  readonly leases: MessageLeases;
  /** Sensitive-word moderation (inputs before the model, the answer as it streams) and external data tools. */
  readonly moderation: ModerationService;
  /** The apps' datasets (`model_config.dataset_configs`); unset: an app with datasets is 400 `app_unavailable`. */
  readonly datasets?: AppDatasetRetrieval;
}

export interface ModelSettings {
  readonly provider: string;
  readonly name: string;
  readonly mode: 'chat' | 'completion';
  readonly params: Record<string, unknown>;
}
