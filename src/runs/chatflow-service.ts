import type { AgentThoughtStore } from '../messages/agent-thoughts.js';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { Conversation, ConversationSort, ConversationStore } from '../messages/conversation-store.js';
import type { FeedbackStore } from '../feedback/feedback-store.js';
import type { ConversationVariables } from './conversation-variables.js';
import type { App } from '../apps/app-service.js';
import type { Clock } from '../infra/clock.js';
import { newId, isUuid } from '../infra/ids.js';
import { invalidParam } from '../infra/errors.js';
import { conversationNotExists, firstMessageNotExists, lastConversationNotExists } from './errors.js';
import type { RunService, StartedRun } from './run-service.js';
import type { Message, MessageStore, NewConversation } from '../messages/message-store.js';
import { conversationName } from '../messages/conversation-name.js';
import type { AnnotationReplier, AnnotationReplyInfo } from '../messages/completion-service.js';
import type { UsageBody } from '../llm/usage.js';
import { annotationReplyInfo, storeAnnotationAnswer, zeroUsage } from '../messages/annotation-answer.js';
import { messageFiles, type MessageFilePorts } from '../messages/message-files.js';

export interface ChatflowMessage {
  readonly run: StartedRun;
  readonly messageId: string;
  readonly conversationId: string;
  readonly createdAt: number;
}

/** A chatflow message answered by an annotation: the graph does not run (as Dify). */
/** A chatflow message answered without a workflow run (an annotation, a preset response). */
export interface DirectAnswer {
  readonly taskId: string;
  readonly messageId: string;
  readonly conversationId: string;
  readonly createdAt: number;
  readonly answer: string;
  readonly usage: UsageBody;
}

export interface AnnotationAnswer extends DirectAnswer {
  readonly annotationReply: AnnotationReplyInfo;
}

/** A chatflow message as the caller sent it. */
export interface ChatflowRequest {
  readonly app: App;
  readonly endUserId: string;
  readonly query: string;
  readonly inputs: Record<string, unknown>;
  readonly conversationId: string | undefined;
  readonly files: readonly unknown[];
}

export interface Page<T> {
  readonly limit: number;
  readonly has_more: boolean;
  readonly data: T[];
}

export { CONVERSATION_SORTS, type ConversationSort } from '../messages/conversation-store.js';

/** The stores a conversation's parts live in (deleting one removes them all, in one transaction). */
export interface ChatflowStores {
  readonly db: Kysely<Database>;
  readonly messages: MessageStore;
  readonly conversations: ConversationStore;
  readonly feedback: FeedbackStore;
  readonly variables: ConversationVariables;
  /** Agent-chat messages' agent thoughts (`agent_thoughts` of `GET /messages`). */
  readonly thoughts: AgentThoughtStore;
  /** The uploads `message_files` describe (with signed preview URLs). */
  readonly files: MessageFilePorts;
}

/**
 * Conversations of every chat app (list, rename, delete, their messages) and chatflow
 * (advanced-chat) messages: starting one runs the graph.
 */
export class ChatflowService {
  readonly #s: ChatflowStores;
  readonly #clock: Clock;
  readonly #runs: RunService;
  readonly #messages: MessageStore;
  readonly #annotations: AnnotationReplier | undefined;

  constructor(stores: ChatflowStores, clock: Clock, runs: RunService, annotations?: AnnotationReplier) {
    this.#s = stores;
    this.#annotations = annotations;
    this.#messages = stores.messages;
    this.#clock = clock;
    this.#runs = runs;
  }

  /** The caller's conversation, or 404 "Conversation Not Exists.". */
  async conversation(appId: string, endUserId: string, id: string): Promise<Conversation> {
    if (!isUuid(id)) throw invalidParam(`conversation_id must be a valid UUID, got "${id}"`);
    const conv = await this.#s.conversations.findOwned(appId, endUserId, id);
    if (!conv) throw conversationNotExists();
    return conv;
  }

  /** Creates or continues a conversation and starts the chatflow run for one query. */
  async send(input: {
    app: App;
    endUserId: string;
    user: string;
    query: string;
    inputs: Record<string, unknown>;
    conversationId: string | undefined;
    files: readonly unknown[];
  }): Promise<ChatflowMessage> {
    const now = this.#clock.now();
    let conversationId: string;
    let inputs = input.inputs;
    let dialogueCount = 1;
    let newConversation: NewConversation | undefined;
    if (input.conversationId && input.conversationId.trim() !== '') {
      const conv = await this.conversation(input.app.id, input.endUserId, input.conversationId.trim());
      conversationId = conv.id;
      inputs = conv.inputs;
      dialogueCount = (await this.#messages.countInConversation(conv.id)) + 1;
    } else {
      conversationId = newId();
      const name = conversationName(input.query);
      // Created together with its first message, in one transaction, just before the run starts.
      newConversation = { id: conversationId, appId: input.app.id, endUserId: input.endUserId, name, inputs };
    }
    const messageId = newId();
    const run = await this.#runs.start({
      app: input.app,
      endUserId: input.endUserId,
      user: input.user,
      inputs,
      files: input.files,
      query: input.query,
      conversationId,
      messageId,
      dialogueCount,
      beforeStart: ({ runId, taskId }, tx) =>
        this.#messages.insert({
          id: messageId,
          appId: input.app.id,
          conversationId,
          endUserId: input.endUserId,
          taskId,
          workflowRunId: runId,
          mode: 'advanced-chat',
          inputs,
          query: input.query,
          files: input.files,
          createdAt: now,
        }, newConversation, tx),
    });
    return { run, messageId, conversationId, createdAt: now };
  }

  /**
   * Annotation reply (Dify's advanced-chat runner checks it before the graph): when the app has
   * reply enabled and an annotation matches `query`, stores the message with the annotation's
   * answer and id, records the hit, and returns the answer; otherwise `undefined` (run the graph).
   */
  async answerFromAnnotation(input: ChatflowRequest): Promise<AnnotationAnswer | undefined> {
    if (!this.#annotations || !input.query) return undefined;
    const annotations = this.#annotations;
    const target = await this.#target(input);
    const hit = await annotations.match(input.app.id, input.query);
    if (!hit) return undefined;
    const now = this.#clock.now();
    const messageId = newId();
    const taskId = newId();
    const usage = await storeAnnotationAnswer(
      { messages: this.#messages, annotations, now: () => this.#clock.now() },
      { id: messageId, appId: input.app.id, conversationId: target.conversationId, endUserId: input.endUserId, taskId, mode: 'advanced-chat', inputs: target.inputs, query: input.query, files: input.files, createdAt: now },
      target.newConversation,
      hit,
    );
    return { taskId, messageId, conversationId: target.conversationId, createdAt: now, answer: hit.content, usage, annotationReply: annotationReplyInfo(hit) };
  }

  /** The inputs a chatflow message runs with: the caller's conversation's (404 when it is not theirs), else `input.inputs`. */
  async inputsFor(input: ChatflowRequest): Promise<Record<string, unknown>> {
    return (await this.#target(input)).inputs;
  }

  /**
   * Answers with `answer` and no workflow run (input moderation's preset response, as Dify's
   * advanced-chat runner before the workflow starts): the message is stored with zero usage.
   */
  async answerDirectly(input: ChatflowRequest, answer: string): Promise<DirectAnswer> {
    const target = await this.#target(input);
    const now = this.#clock.now();
    const messageId = newId();
    const taskId = newId();
    await this.#messages.insert(
      { id: messageId, appId: input.app.id, conversationId: target.conversationId, endUserId: input.endUserId, taskId, mode: 'advanced-chat', inputs: target.inputs, query: input.query, files: input.files, createdAt: now, annotationId: null },
      target.newConversation,
    );
    const usage = zeroUsage();
    await this.#messages.finish(messageId, { answer, status: 'normal', error: null, promptTokens: 0, completionTokens: 0, usage: { ...usage }, totalPrice: usage.total_price, currency: usage.currency, latency: usage.latency, updatedAt: this.#clock.now() });
    return { taskId, messageId, conversationId: target.conversationId, createdAt: now, answer, usage };
  }

  /** The conversation a message goes to: the caller's (with its inputs), or a new one to create with it. */
  async #target(input: ChatflowRequest): Promise<{ conversationId: string; inputs: Record<string, unknown>; newConversation: NewConversation | undefined }> {
    if (input.conversationId && input.conversationId.trim() !== '') {
      const conv = await this.conversation(input.app.id, input.endUserId, input.conversationId.trim());
      return { conversationId: conv.id, inputs: conv.inputs, newConversation: undefined };
    }
    const conversationId = newId();
    return { conversationId, inputs: input.inputs, newConversation: { id: conversationId, appId: input.app.id, endUserId: input.endUserId, name: conversationName(input.query), inputs: input.inputs } };
  }

  async message(id: string): Promise<Message | undefined> {
    return this.#messages.find(id);
  }

  /**
   * A page of a conversation's messages, oldest first, before `firstId` (Dify's pagination), each
   * with the end user's `feedback` and its `message_files` (preview URLs on `origin` unless
   * `FILES_URL` is set).
   */
  async messages(appId: string, endUserId: string, conversationId: string, firstId: string | undefined, limit: number, origin: string): Promise<Page<Record<string, unknown>>> {
    const conv = await this.conversation(appId, endUserId, conversationId);
    let before: Message | undefined;
    if (firstId) {
      before = await this.#messages.findInConversation(firstId, conv.id);
      if (!before) throw firstMessageNotExists();
    }
    const rows = await this.#messages.listByConversation(conv.id, { limit: limit + 1, before });
    const has_more = rows.length > limit;
    const page = rows.slice(0, limit).reverse();
    const agentIds = page.filter((m) => m.mode === 'agent-chat').map((m) => m.id);
    const thoughts = agentIds.length > 0 ? await this.#s.thoughts.listFor(agentIds) : new Map<string, Record<string, unknown>[]>();
    const ratings = await this.#s.feedback.userRatings(page.map((m) => m.id));
    const files = await Promise.all(page.map((m) => messageFiles(this.#s.files, origin, m, toolFileIds(thoughts.get(m.id)))));
    const data = page.map((m, i) => ({
      id: m.id,
      conversation_id: m.conversationId,
      parent_message_id: null,
      inputs: m.inputs,
      query: m.query,
      answer: m.answer,
      message_files: files[i],
      feedback: ratings.has(m.id) ? { rating: ratings.get(m.id) } : null,
      retriever_resources: [],
      agent_thoughts: thoughts.get(m.id) ?? [],
      created_at: Math.floor(m.createdAt / 1000),
      status: m.status,
      error: m.error,
      extra_contents: [],
    }));
    return { limit, has_more, data };
  }

  /** A page of the caller's conversations after `lastId` in `sort` order. */
  async conversations(appId: string, endUserId: string, lastId: string | undefined, limit: number, sort: ConversationSort, pinned?: boolean): Promise<Page<Record<string, unknown>>> {
    const rows = await this.#s.conversations.page(appId, endUserId, { lastId, limit: limit + 1, sort, pinned });
    if (!rows) throw lastConversationNotExists();
    return { limit, has_more: rows.length > limit, data: rows.slice(0, limit).map(conversationItem) };
  }

  /**
   * Renames the caller's conversation: to `name`, or with `autoGenerate` to the first line of its
   * first query (the rule new conversations are named by). Answers the list item.
   */
  async rename(appId: string, endUserId: string, id: string, opts: { name: string | undefined; autoGenerate: boolean }): Promise<Record<string, unknown>> {
    const conv = await this.conversation(appId, endUserId, id);
    let name = opts.name?.trim() ?? '';
    if (opts.autoGenerate) {
      const first = await this.#messages.firstQuery(conv.id);
      if (first === undefined) throw invalidParam('auto_generate needs a conversation with at least one message');
      name = conversationName(first);
    } else if (name === '') {
      throw invalidParam('name is required when auto_generate is false');
    }
    const updatedAt = this.#clock.now();
    await this.#s.conversations.rename(conv.id, name, updatedAt);
    return conversationItem({ ...conv, name, updatedAt });
  }

  /** Pins the caller's conversation (the web app's pinned list), or with `pinned` false unpins it. */
  async pin(appId: string, endUserId: string, id: string, pinned: boolean): Promise<void> {
    const conv = await this.conversation(appId, endUserId, id);
    if (pinned) await this.#s.conversations.pin(conv, this.#clock.now());
    else await this.#s.conversations.unpin(conv);
  }

  /** Deletes the caller's conversation with its messages, their feedback and thoughts, and its variables (as Dify). */
  async delete(appId: string, endUserId: string, id: string): Promise<void> {
    const conv = await this.conversation(appId, endUserId, id);
    const s = this.#s;
    await s.db.transaction().execute(async (tx) => {
      await s.feedback.deleteByConversation(conv.id, tx);
      await s.thoughts.deleteFor(await s.messages.idsInConversation(conv.id, tx), tx);
      await s.messages.deleteByConversation(conv.id, tx);
      await s.variables.deleteByConversation(conv.id, tx);
      await s.conversations.delete(conv.id, tx);
    });
  }
}

/** The ids of the files an agent's tools made, from its listed thoughts (each thought's `files`). */
function toolFileIds(thoughts: readonly Record<string, unknown>[] | undefined): string[] {
  return (thoughts ?? []).flatMap((t) => (Array.isArray(t.files) ? t.files.filter((f): f is string => typeof f === 'string') : []));
}

function conversationItem(c: Conversation): Record<string, unknown> {
  return {
    id: c.id,
    name: c.name,
    inputs: c.inputs,
    status: c.status,
    introduction: '',
    created_at: Math.floor(c.createdAt / 1000),
    updated_at: Math.floor(c.updatedAt / 1000),
  };
}
