import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import { appUnavailable } from '../apps/errors.js';
import { validateInputs } from '../apps/input-form.js';
import type { Config } from '../config.js';
import type { UploadService } from '../files/upload-service.js';
import { effectiveLimit, type ActiveRequestLimiter } from '../infra/active-requests.js';
import type { Clock } from '../infra/clock.js';
import { internalServerError, invalidParam, ServiceError } from '../infra/errors.js';
import { newId } from '../infra/ids.js';
import type { Logger } from '../infra/logger.js';
import { completionRequestError } from '../llm/errors.js';
import type { ContentPart, ModelProvider, ModelProviders, ProviderUsage } from '../llm/model-provider.js';
import { buildUsage, type UsageBody } from '../llm/usage.js';
import type { TextOffload } from '../text/offload.js';
import { buildChatPrompt, type Exchange } from './chat-prompt.js';
import { buildCompletionPrompt, fileInputs, type CompletionPrompt } from './completion-prompt.js';
import { imageParts } from './file-parts.js';
import type { MessageStatus, MessageStore, NewConversation, NewMessage } from './message-store.js';
import { annotationReplyInfo, storeAnnotationAnswer, zeroUsage, type AnnotationHit, type AnnotationReplier, type AnnotationReplyInfo } from './annotation-answer.js';
import { conversationName } from './conversation-name.js';
import { StopRequested, type TaskRegistry } from './task-registry.js';
import { isObject } from '../infra/objects.js';
import { withCaller, type ToolRuntime } from '../tools/tool.js';
import { agentModeOf } from './agent-mode.js';
import { AgentThoughtRecorder, agentThoughtEvent, type AgentThoughtStore } from './agent-thoughts.js';
import { runAgentTurn } from './agent-turn.js';
import { NodeFailure } from '../engine/types.js';
import { renderTemplate } from './completion-prompt.js';
import type { MessageLeases } from './message-leases.js';

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
  | { readonly type: 'end'; readonly outcome: CompletionOutcome };

export interface CompletionOutcome {
  readonly status: Exclude<MessageStatus, 'running'>;
  readonly answer: string;
  readonly usage: UsageBody;
  /** Set when `status` is `error`. */
  readonly error: ServiceError | undefined;
  /** Dify's `metadata.annotation_reply`, set when an annotation answered instead of the model. */
  readonly annotationReply?: AnnotationReplyInfo;
}

export type { AnnotationHit, AnnotationReplier, AnnotationReplyInfo } from './annotation-answer.js';

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

/** Dify's `TokenBufferMemory` reads at most this many messages of a conversation. */
const CHAT_MEMORY_MAX_MESSAGES = 500;

interface Prepared {
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
}

interface ModelSettings {
  readonly provider: string;
  readonly name: string;
  readonly mode: 'chat' | 'completion';
  readonly params: Record<string, unknown>;
}

function modelSettings(app: App): ModelSettings {
  const model = app.dsl.model_config?.model;
  if (!isObject(model) || typeof model.provider !== 'string' || typeof model.name !== 'string') throw appUnavailable();
  return {
    provider: model.provider,
    name: model.name,
    mode: model.mode === 'completion' ? 'completion' : 'chat',
    params: isObject(model.completion_params) ? model.completion_params : {},
  };
}

/** Top-level `files` reach the model only when the app enables image upload (as Dify). */
function imageUpload(app: App): { enabled: boolean; detail: 'low' | 'high' } {
  const fu = app.dsl.model_config?.file_upload;
  const image = isObject(fu) && isObject(fu.image) ? fu.image : undefined;
  const enabled = image?.enabled === true || (isObject(fu) && fu.enabled === true);
  return { enabled, detail: image?.detail === 'low' ? 'low' : 'high' };
}

/** Raised into the abort signal when a generation runs past `APP_MAX_EXECUTION_TIME`. */
class ExecutionTimeout extends Error {
  override name = 'ExecutionTimeout';
}

/**
 * Model-config apps — text generators (`completion`) and chatbots (`chat`): validates the request,
 * streams the model's answer, stores the message, and lets its owner stop it. Holds one slot of
 * the app's concurrency limit from start until the message is stored.
 */
export class CompletionService {
  readonly #d: CompletionDeps;

  constructor(deps: CompletionDeps) {
    this.#d = deps;
  }

  /**
   * Validates and starts a completion app's generation. Everything that can be refused is refused
   * here, before any byte is sent (400 `app_unavailable` / `invalid_param` /
   * `provider_not_initialize`, 429 `too_many_requests`). `sink` receives events synchronously.
   */
  async start(input: CompletionInput, sink?: CompletionSink): Promise<CompletionRun> {
    if (input.app.mode !== 'completion') throw appUnavailable();
    const p = await this.#prepare(input);
    const prompt = buildCompletionPrompt(p.prePrompt, p.inputs, p.query, p.model.mode === 'chat' ? p.images : []);
    const messageId = newId();
    // Dify gives every completion message its own conversation; feedback items carry its id.
    const conversation = { id: messageId, appId: input.app.id, endUserId: p.endUserId, name: 'New conversation', inputs: p.inputs };
    return this.#launch(p, prompt, { messageId, conversationId: messageId }, conversation, sink);
  }

  /**
   * Starts a chat or agent-chat app's answer to `query` in a new conversation, or in the caller's
   * conversation `conversationId` (404 when it is not theirs), with the conversation's history as
   * memory. Agent-chat answers run the agent loop with the app's tools (see `#launchAgent`).
   */
  async startChat(input: ChatInput, sink?: CompletionSink): Promise<ChatRun> {
    const d = this.#d;
    const requested = input.conversationId?.trim();
    // A conversation keeps the inputs it started with; later requests' inputs are ignored (as Dify).
    const p = await this.#prepare(input, !requested);
    let conversationId: string;
    let newConversation: NewConversation | undefined;
    let history: Exchange[] = [];
    let inputs = p.inputs;
    if (requested) {
      const conv = await d.conversations.conversation(input.app.id, p.endUserId, requested);
      conversationId = conv.id;
      inputs = conv.inputs;
      history = await this.#history(conv.id);
    } else {
      conversationId = newId();
      newConversation = { id: conversationId, appId: input.app.id, endUserId: p.endUserId, name: conversationName(p.query), inputs };
    }
    const prompt = buildChatPrompt(p.prePrompt, inputs, history, p.query, p.model.mode === 'chat' ? p.images : []);
    // Completion-mode models continue the transcript; stop them at the next human turn (as Dify).
    const stop = p.model.params.stop;
    const unset = stop === undefined || stop === null || (Array.isArray(stop) && stop.length === 0);
    const model = p.model.mode === 'completion' && unset ? { ...p.model, params: { ...p.model.params, stop: ['Human:'] } } : p.model;
    // Annotation reply (Dify's chat app runner): a matching annotation answers instead of the model.
    const hit = p.query ? await d.annotations.match(input.app.id, p.query) : undefined;
    const ids = { messageId: newId(), conversationId };
    let run: CompletionRun;
    if (hit) run = await this.#replyWithAnnotation({ ...p, inputs }, hit, ids, newConversation, sink);
    else if (input.app.mode === 'agent-chat') run = await this.#launchAgent({ ...p, inputs }, history, ids, newConversation, sink);
    else run = await this.#launch({ ...p, model, inputs }, prompt, ids, newConversation, sink);
    return { ...run, conversationId };
  }

  /** The checks and lookups every model-config app shares. */
  async #prepare(input: CompletionInput, validate = true): Promise<Prepared> {
    const d = this.#d;
    const { app } = input;
    const startedAt = d.clock.now();
    if (input.user === undefined || input.user === '') throw invalidParam('Arg user must be provided.');
    const inputs = validate ? validateInputs(app.inputs, input.inputs) : {};
    const model = modelSettings(app);
    const provider = d.providers.get(model.provider);
    const upload = imageUpload(app);
    const refs = [...fileInputs(app.inputs, inputs), ...(upload.enabled && input.files ? input.files : [])];
    const images = refs.length ? await imageParts(refs, app.id, d.uploads, 'files', upload.detail) : [];
    const endUser = await d.endUsers.getOrCreate(app.id, input.user);
    const prePrompt = typeof app.dsl.model_config?.pre_prompt === 'string' ? app.dsl.model_config.pre_prompt : '';
    // NUL characters are dropped from the query, as Dify does (PostgreSQL cannot store them).
    return { app, startedAt, inputs, model, provider, images, endUserId: endUser.id, user: input.user, prePrompt, query: input.query.replaceAll('\x00', ''), files: input.files ?? [] };
  }

  /**
   * Takes a concurrency slot and registers a task, then runs `run` (which never rejects) for its
   * outcome; the slot and the task are held until it ends.
   */
  async #start(p: Prepared, messageId: string, run: (task: { taskId: string; controller: AbortController }) => Promise<CompletionOutcome>): Promise<CompletionRun> {
    const d = this.#d;
    const { app } = p;
    // the slot is named by the message, so a sweep can free it should this process die
    const release = await d.activeRequests.acquire(app.id, effectiveLimit(app.maxActiveRequests, d.config.maxActiveRequests), messageId);
    try {
      const taskId = newId();
      const controller = new AbortController();
      const unregister = d.tasks.register(taskId, { appId: app.id, endUserId: p.endUserId, controller });
      const done = run({ taskId, controller }).finally(() => {
        unregister();
        release();
      });
      return { taskId, messageId, createdAt: p.startedAt, done };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The message this generation answers, as its row is first stored. */
  #newMessage(p: Prepared, ids: { readonly messageId: string; readonly conversationId: string }, taskId: string): Omit<NewMessage, 'annotationId'> {
    const { app } = p;
    return { id: ids.messageId, appId: app.id, conversationId: ids.conversationId, endUserId: p.endUserId, taskId, mode: app.mode, inputs: p.inputs, query: p.query, files: p.files, createdAt: p.startedAt };
  }

  /** `sink`, guarded: a listener that throws (a broken socket, say) must not change the outcome or lose the message. */
  #emitter(sink: CompletionSink | undefined, messageId: string): CompletionSink {
    return (ev) => {
      try {
        sink?.(ev);
      } catch (err) {
        this.#d.logger.warn({ err, messageId }, 'stream listener failed');
      }
    };
  }

  /** Takes a concurrency slot, registers the task, stores the message and starts generating. */
  #launch(
    p: Prepared,
    prompt: CompletionPrompt,
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
  ): Promise<CompletionRun> {
    const { messageId } = ids;
    return this.#start(p, messageId, ({ taskId, controller }) => {
      // The row is written once the upstream request is on its way, while the model works; without
      // an upstream request, at the first chunk. It is awaited before the end either way.
      let inserted: Promise<void> | undefined;
      const insert = () => {
        inserted ??= this.#d.messages.insert(this.#newMessage(p, ids, taskId), conversation);
        inserted.catch(() => undefined);
        return inserted;
      };
      return this.#generate({ provider: p.provider, model: p.model, prompt, controller, startedAt: p.startedAt, messageId, insert, sink });
    });
  }

  /**
   * Answers with an annotation, as Dify's `direct_output`: the message is stored with the
   * annotation's id and the hit recorded, then the answer streams one character per `message`
   * event, and the end carries zero usage and `annotation_reply`.
   */
  #replyWithAnnotation(
    p: Prepared,
    hit: AnnotationHit,
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
  ): Promise<CompletionRun> {
    const d = this.#d;
    const { messageId } = ids;
    const emit = this.#emitter(sink, messageId);
    return this.#start(p, messageId, async ({ taskId }) => {
      let usage: UsageBody;
      try {
        usage = await storeAnnotationAnswer({ messages: d.messages, annotations: d.annotations, now: () => d.clock.now() }, this.#newMessage(p, ids, taskId), conversation, hit);
      } catch (err) {
        d.logger.error({ err, messageId }, 'annotation reply could not be stored');
        const outcome: CompletionOutcome = { status: 'error', answer: '', usage: zeroUsage(), error: internalServerError() };
        emit({ type: 'end', outcome });
        return outcome;
      }
      emit({ type: 'sent' });
      for (const ch of hit.content) emit({ type: 'message', text: ch });
      const outcome: CompletionOutcome = { status: 'normal', answer: hit.content, usage, error: undefined, annotationReply: annotationReplyInfo(hit) };
      emit({ type: 'end', outcome });
      return outcome;
    });
  }

  /** The conversation's finished exchanges, oldest first, as many as fit `CHAT_MEMORY_MAX_TOKENS`. */
  async #history(conversationId: string): Promise<Exchange[]> {
    const budget = this.#d.config.chatMemoryMaxTokens;
    const rows = await this.#d.messages.listByConversation(conversationId, { limit: CHAT_MEMORY_MAX_MESSAGES });
    const done = rows.filter((m) => !(m.status === 'running' || m.status === 'error' || m.answer === ''));
    // One batch: counted on the worker thread when the history is large.
    const counts = await this.#d.offload.countTokens(done.flatMap((m) => [m.query, m.answer]));
    const out: Exchange[] = [];
    let used = 0;
    for (const [i, m] of done.entries()) {
      used += counts[2 * i]! + counts[2 * i + 1]!;
      if (used > budget) break;
      out.push({ query: m.query, answer: m.answer });
    }
    return out.reverse();
  }

  /** Stops the owner's task of an app of `mode`; anything else is a silent no-op (as Dify). */
  async stop(app: App, taskId: string, user: string | undefined, mode: 'completion' | 'chat' | 'agent-chat' = 'completion'): Promise<void> {
    if (app.mode !== mode) throw appUnavailable();
    if (user === undefined || user === '') throw invalidParam('Arg user must be provided.');
    const endUser = await this.#d.endUsers.find(app.id, user);
    if (endUser) await this.#d.tasks.stop(taskId, app.id, endUser.id);
  }

  async #generate(g: {
    provider: ModelProvider;
    model: ModelSettings;
    prompt: ReturnType<typeof buildCompletionPrompt>;
    controller: AbortController;
    startedAt: number;
    messageId: string;
    /** Stores the message row (once; later calls return the same promise). */
    insert: () => Promise<void>;
    sink: CompletionSink | undefined;
  }): Promise<CompletionOutcome> {
    const d = this.#d;
    const { signal } = g.controller;
    const emit = this.#emitter(g.sink, g.messageId);
    const limitS = d.config.appMaxExecutionSeconds;
    const timer = setTimeout(() => g.controller.abort(new ExecutionTimeout(`generation exceeded APP_MAX_EXECUTION_TIME (${limitS} s)`)), limitS * 1000);
    timer.unref();
    let answer = '';
    let reported: ProviderUsage | undefined;
    let status: CompletionOutcome['status'] = 'normal';
    let error: ServiceError | undefined;
    const live = d.leases.track(g.messageId);
    try {
      let sent = false;
      const onSent = () => {
        sent = true;
        void g.insert();
        emit({ type: 'sent' });
      };
      const chunks = g.provider.stream({ model: g.model.name, mode: g.model.mode, messages: g.prompt.messages, prompt: g.prompt.text, params: g.model.params, signal, onSent });
      for await (const chunk of chunks) {
        if (chunk.type === 'text') {
          if (!sent) {
            // A provider without an upstream request: the row is stored before the first frame
            // names it (a failure surfaces when the message is finished).
            onSent();
            await g.insert().catch(() => undefined);
          }
          answer += chunk.text;
          live.answer = answer;
          emit({ type: 'message', text: chunk.text });
        } else if (chunk.type === 'usage') {
          reported = { ...reported, ...chunk.usage };
        }
        if (signal.aborted) break;
      }
      if (signal.aborted) throw signal.reason;
    } catch (err) {
      ({ status, error } = this.#failure(err, signal));
    } finally {
      clearTimeout(timer);
      live.end();
    }
    return this.#conclude({ ...g, emit, answer, reported: status === 'normal' ? reported : undefined, promptText: g.prompt.text, status, error });
  }

  /**
   * Ends a generation: usage (counted when the provider reported none), the message row finished
   * (with `before`, more rows of the same answer), the `end` event.
   */
  async #conclude(g: {
    model: ModelSettings;
    startedAt: number;
    messageId: string;
    insert: () => Promise<void>;
    emit: CompletionSink;
    answer: string;
    reported: ProviderUsage | undefined;
    promptText: string;
    status: CompletionOutcome['status'];
    error: ServiceError | undefined;
    before?: () => Promise<void>;
  }): Promise<CompletionOutcome> {
    const d = this.#d;
    const { answer } = g;
    let { status, error } = g;
    const usage = await buildUsage(
      {
        reported: g.reported,
        promptText: g.promptText,
        answer,
        price: d.config.prices[g.model.name],
        latencySeconds: (d.clock.now() - g.startedAt) / 1000,
      },
      (texts) => d.offload.countTokens(texts),
    );
    try {
      await g.insert();
      await g.before?.();
      await d.messages.finish(g.messageId, {
        answer,
        status,
        error: error?.message ?? null,
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        usage: { ...usage },
        totalPrice: usage.total_price,
        currency: usage.currency,
        latency: usage.latency,
        updatedAt: d.clock.now(),
      });
    } catch (err) {
      d.logger.error({ err, messageId: g.messageId }, 'message could not be stored');
      status = 'error';
      error = internalServerError();
    }
    const outcome: CompletionOutcome = { status, answer, usage, error };
    g.emit({ type: 'end', outcome });
    return outcome;
  }

  /** The outcome of a generation that threw: stopped by its owner, timed out, or failed. */
  #failure(err: unknown, signal: AbortSignal): { status: CompletionOutcome['status']; error: ServiceError | undefined } {
    if (signal.aborted && signal.reason instanceof StopRequested) return { status: 'stopped', error: undefined };
    if (signal.aborted && signal.reason instanceof ExecutionTimeout) return { status: 'error', error: completionRequestError(signal.reason.message) };
    if (err instanceof ServiceError) return { status: 'error', error: err };
    // the agent loop's failures (a tool that cannot run here, a model error) carry their message
    if (err instanceof NodeFailure) return { status: 'error', error: completionRequestError(err.message) };
    this.#d.logger.error({ err }, 'completion failed');
    return { status: 'error', error: internalServerError() };
  }

  /**
   * Takes a concurrency slot, registers the task, stores the message and runs an agent-chat
   * answer: the agent loop of the agent node with the app's tools, streaming its text and its
   * thoughts; the thoughts are stored with the finished message.
   */
  #launchAgent(
    p: Prepared,
    history: readonly Exchange[],
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
  ): Promise<CompletionRun> {
    const d = this.#d;
    const { messageId } = ids;
    const emit = this.#emitter(sink, messageId);
    return this.#start(p, messageId, async ({ taskId, controller }) => {
      const { signal } = controller;
      const limitS = d.config.appMaxExecutionSeconds;
      const timer = setTimeout(() => controller.abort(new ExecutionTimeout(`generation exceeded APP_MAX_EXECUTION_TIME (${limitS} s)`)), limitS * 1000);
      timer.unref();
      const inserted = d.messages.insert(this.#newMessage(p, ids, taskId), conversation);
      inserted.catch(() => undefined);
      const insert = () => inserted;
      const mode = agentModeOf(p.app);
      const labels = Object.fromEntries(mode.tools.flatMap((t) => [[t.ref.toolName, t.label]] as const));
      const recorder = new AgentThoughtRecorder(messageId, { now: () => d.clock.now(), newId }, labels, (t) => emit({ type: 'thought', thought: agentThoughtEvent(t) }));
      const instruction = renderTemplate(p.prePrompt, p.inputs);
      let answer = '';
      let reported: ProviderUsage | undefined;
      let status: CompletionOutcome['status'] = 'normal';
      let error: ServiceError | undefined;
      const live = d.leases.track(messageId);
      try {
        // the row exists before a frame names the message
        await inserted;
        emit({ type: 'sent' });
        const result = await runAgentTurn(
          {
            providers: d.providers,
            // workflow tools and tool files belong to the answer's app and end user (the message stands for the run)
            tools: d.tools && withCaller(d.tools, { workspaceId: p.app.workspaceId, appId: p.app.id, runId: messageId, endUserId: p.endUserId, user: p.user, callDepth: 0 }),
            priceOf: (m) => d.config.prices[m], maxIterations: d.config.runs.agentMaxIterations, now: () => d.clock.now(), newId },
          {
            appName: p.app.name,
            mode,
            model: p.model,
            instruction,
            history,
            query: p.query,
            signal,
            recorder,
            onText: (text) => {
              answer += text;
              live.answer = answer;
              emit({ type: 'message', text, agent: true });
            },
          },
        );
        if (signal.aborted) throw signal.reason;
        reported = { promptTokens: result.promptTokens, completionTokens: result.completionTokens };
        answer = result.text;
      } catch (err) {
        ({ status, error } = this.#failure(err, signal));
      } finally {
        clearTimeout(timer);
        live.end();
      }
      return this.#conclude({
        model: p.model,
        startedAt: p.startedAt,
        messageId,
        insert,
        emit,
        answer,
        reported,
        promptText: [instruction, ...history.flatMap((h) => [h.query, h.answer]), p.query].join('\n'),
        status,
        error,
        before: () => d.thoughts.save(recorder.thoughts),
      });
    });
  }
}
