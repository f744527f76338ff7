import type { App } from '../apps/app-service.js';
import { appUnavailable } from '../apps/errors.js';
import { validateInputs } from '../apps/input-form.js';
import { checkRequestFiles } from '../apps/file-upload-rules.js';
import { effectiveLimit } from '../infra/active-requests.js';
import { internalServerError, invalidParam, ServiceError } from '../infra/errors.js';
import { newId } from '../infra/ids.js';
import { Cancellation } from '../lib/cancellation.js';
import type { ProviderUsage } from '../llm/model-provider.js';
import type { UsageBody } from '../llm/usage.js';
import { buildChatPrompt, type Exchange } from './chat-prompt.js';
import { buildCompletionPrompt, fileInputs, type CompletionPrompt } from './completion-prompt.js';
import { imageParts } from './file-parts.js';
import type { NewConversation, NewMessage } from './message-store.js';
import { annotationReplyInfo, storeAnnotationAnswer, zeroUsage, type AnnotationHit, type AnnotationReplyInfo } from './annotation-answer.js';
import { conversationName } from './conversation-name.js';
import { isObject } from '../infra/objects.js';
import { withCaller } from '../tools/tool.js';
import { agentModeOf } from './agent-mode.js';
import { AgentThoughtRecorder, agentThoughtEvent } from './agent-thoughts.js';
import { runAgentTurn } from './agent-turn.js';
import { renderTemplate } from './completion-prompt.js';
import type { ChatInput, ChatRun, CompletionDeps, CompletionInput, CompletionOutcome, CompletionRun, CompletionSink, ModelSettings, Prepared } from './completion-types.js';
import { conclude, emitter, ExecutionTimeout, failure, generate, OutputModerated } from './model-generation.js';
import { appDatasetConfig, type AppDatasetConfig } from '../apps/app-datasets.js';
import { appFeatures } from '../apps/parameters.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';
import type { ToolRuntime } from '../tools/tool.js';
import type { RetrievedContext } from './dataset-retrieval.js';
import { datasetTools } from './dataset-tools.js';

export type { ChatInput, ChatRun, CompletionDeps, CompletionEvent, CompletionInput, CompletionOutcome, CompletionRun, CompletionSink, ConversationLookup } from './completion-types.js';
export type { AnnotationHit, AnnotationReplier, AnnotationReplyInfo } from './annotation-answer.js';

/** Dify's `TokenBufferMemory` reads at most this many messages of a conversation. */
const CHAT_MEMORY_MAX_MESSAGES = 500;

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
    const d = this.#d;
    const p = await this.#prepare(input);
    const messageId = newId();
    // Dify gives every completion message its own conversation; feedback items carry its id.
    const conversation = { id: messageId, appId: input.app.id, endUserId: p.endUserId, name: 'New conversation', inputs: p.inputs };
    const ids = { messageId, conversationId: messageId };
    // Dify's completion app runner: input moderation, then the external data tools fill the prompt's inputs
    const gate = await d.moderation.checkInputs(input.app, p.inputs, p.query);
    if (gate.type === 'direct') return this.#replyDirect(p, gate.answer, ids, conversation, sink);
    const promptInputs = await d.moderation.fillExternalData(input.app, gate.inputs, gate.query);
    // `dataset_query_variable`: the input whose value the datasets are searched with (as Dify)
    const knowledge = await this.#knowledge(p, (cfg) => (cfg.queryVariable !== null ? asQuery(gate.inputs[cfg.queryVariable]) : gate.query));
    const prompt = buildCompletionPrompt(p.prePrompt, promptInputs, gate.query, p.model.mode === 'chat' ? p.images : [], knowledge?.context);
    return this.#launch(p, prompt, ids, conversation, sink, knowledge?.resources);
  }

  /**
   * The context of an app with datasets (`model_config.dataset_configs`) for this answer, and its
   * citations when the app shows them (`retriever_resource`); undefined for an app without datasets.
   */
  async #knowledge(p: Prepared, queryOf: (cfg: AppDatasetConfig) => string): Promise<RetrievedContext | undefined> {
    const cfg = appDatasetConfig(p.app.dsl);
    if (!cfg) return undefined;
    const datasets = this.#d.datasets;
    if (!datasets) throw appUnavailable('This server has no knowledge retrieval, so the app\'s datasets (model_config.dataset_configs) cannot be searched.');
    const found = await datasets.retrieve(p.app, cfg, queryOf(cfg), p.model, new AbortController().signal);
    return showsCitations(p.app) ? found : { context: found.context, resources: [] };
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
    const ids = { messageId: newId(), conversationId };
    // Dify's chat app runner: input moderation (the preset response may answer), annotation reply,
    // then the external data tools fill the prompt's inputs. The message keeps the caller's query.
    const gate = await d.moderation.checkInputs(input.app, inputs, p.query);
    if (gate.type === 'direct') return { ...(await this.#replyDirect({ ...p, inputs }, gate.answer, ids, newConversation, sink)), conversationId };
    const query = gate.query;
    // Annotation reply: a matching annotation answers instead of the model.
    const hit = query ? await d.annotations.match(input.app.id, query) : undefined;
    if (hit) return { ...(await this.#replyWithAnnotation({ ...p, inputs }, hit, ids, newConversation, sink)), conversationId };
    const promptInputs = await d.moderation.fillExternalData(input.app, gate.inputs, query);
    if (input.app.mode === 'agent-chat') return { ...(await this.#launchAgent({ ...p, inputs }, history, ids, newConversation, sink, { inputs: promptInputs, query })), conversationId };
    const knowledge = await this.#knowledge(p, () => query);
    const prompt = buildChatPrompt(p.prePrompt, promptInputs, history, query, p.model.mode === 'chat' ? p.images : [], knowledge?.context);
    // Completion-mode models continue the transcript; stop them at the next human turn (as Dify).
    const stop = p.model.params.stop;
    const unset = stop === undefined || stop === null || (Array.isArray(stop) && stop.length === 0);
    const model = p.model.mode === 'completion' && unset ? { ...p.model, params: { ...p.model.params, stop: ['Human:'] } } : p.model;
    return { ...(await this.#launch({ ...p, model, inputs }, prompt, ids, newConversation, sink, knowledge?.resources)), conversationId };
  }

  /** The checks and lookups every model-config app shares. */
  async #prepare(input: CompletionInput, validate = true): Promise<Prepared> {
    const d = this.#d;
    const { app } = input;
    const startedAt = d.clock.now();
    if (input.user === undefined || input.user === '') throw invalidParam('Arg user must be provided.');
    const maxFiles = d.config.upload.workflowFileUploadLimit;
    const inputs = validate ? validateInputs(app.inputs, input.inputs, maxFiles) : {};
    checkRequestFiles(app, input.files, maxFiles);
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
  async #start(p: Prepared, messageId: string, run: (task: { taskId: string; controller: Cancellation }) => Promise<CompletionOutcome>): Promise<CompletionRun> {
    const d = this.#d;
    const { app } = p;
    // the slot is named by the message, so a sweep can free it should this process die
    const release = await d.activeRequests.acquire(app.id, effectiveLimit(app.maxActiveRequests, d.config.maxActiveRequests), messageId);
    try {
      const taskId = newId();
      const controller = new Cancellation();
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

  /** Takes a concurrency slot, registers the task, stores the message and starts generating. */
  #launch(
    p: Prepared,
    prompt: CompletionPrompt,
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
    retrieverResources?: readonly RetrieverResource[],
  ): Promise<CompletionRun> {
    const { messageId } = ids;
    const emit = emitter(this.#d, sink, messageId);
    const moderation = this.#d.moderation.outputModeration(p.app, (text, reason) => emit({ type: 'replace', text, reason }));
    return this.#start(p, messageId, ({ taskId, controller }) => {
      // The row is written once the upstream request is on its way, while the model works; without
      // an upstream request, at the first chunk. It is awaited before the end either way.
      let inserted: Promise<void> | undefined;
      const insert = () => {
        inserted ??= this.#d.messages.insert(this.#newMessage(p, ids, taskId), conversation);
        inserted.catch(() => undefined);
        return inserted;
      };
      return generate(this.#d, { provider: p.provider, model: p.model, prompt, controller, startedAt: p.startedAt, messageId, insert, sink, moderation, retrieverResources });
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
    return this.#answerWithout(p, ids, sink, hit.content, 'annotation reply', (taskId) =>
      storeAnnotationAnswer({ messages: d.messages, annotations: d.annotations, now: () => d.clock.now() }, this.#newMessage(p, ids, taskId), conversation, hit), annotationReplyInfo(hit));
  }

  /**
   * Answers with the input moderation's preset response, as Dify's `direct_output`: the message is
   * stored with it, it streams one character per `message` event, and the end carries zero usage.
   */
  #replyDirect(
    p: Prepared,
    answer: string,
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
  ): Promise<CompletionRun> {
    const d = this.#d;
    return this.#answerWithout(p, ids, sink, answer, 'moderated answer', async (taskId) => {
      await d.messages.insert({ ...this.#newMessage(p, ids, taskId), annotationId: null }, conversation);
      const usage = zeroUsage();
      await d.messages.finish(ids.messageId, { answer, status: 'normal', error: null, promptTokens: 0, completionTokens: 0, usage: { ...usage }, totalPrice: usage.total_price, currency: usage.currency, latency: usage.latency, updatedAt: d.clock.now() });
      return usage;
    });
  }

  /** An answer no model writes (an annotation, a preset response): stored by `store`, then streamed one character per event. */
  #answerWithout(
    p: Prepared,
    ids: { readonly messageId: string; readonly conversationId: string },
    sink: CompletionSink | undefined,
    answer: string,
    what: string,
    store: (taskId: string) => Promise<UsageBody>,
    annotationReply?: AnnotationReplyInfo,
  ): Promise<CompletionRun> {
    const d = this.#d;
    const { messageId } = ids;
    const emit = emitter(this.#d, sink, messageId);
    return this.#start(p, messageId, async ({ taskId }) => {
      let usage: UsageBody;
      try {
        usage = await store(taskId);
      } catch (err) {
        d.logger.error({ err, messageId }, `${what} could not be stored`);
        const outcome: CompletionOutcome = { status: 'error', answer: '', usage: zeroUsage(), error: internalServerError() };
        emit({ type: 'end', outcome });
        return outcome;
      }
      emit({ type: 'sent' });
      for (const ch of answer) emit({ type: 'message', text: ch });
      const outcome: CompletionOutcome = { status: 'normal', answer, usage, error: undefined, ...(annotationReply ? { annotationReply } : {}) };
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

  /**
   * Takes a concurrency slot, registers the task, stores the message and runs an agent-chat
   * answer: the agent loop of the agent node with the app's tools, streaming its text and its
   * thoughts; the thoughts are stored with the finished message.
   */
  async #launchAgent(
    p: Prepared,
    history: readonly Exchange[],
    ids: { readonly messageId: string; readonly conversationId: string },
    conversation: NewConversation | undefined,
    sink: CompletionSink | undefined,
    prompt: { readonly inputs: Record<string, unknown>; readonly query: string },
  ): Promise<CompletionRun> {
    const d = this.#d;
    const { messageId } = ids;
    // the app's datasets are retriever tools of the agent (Dify's `DatasetRetrieverTool`), checked before anything starts
    const cfg = appDatasetConfig(p.app.dsl);
    if (cfg && !d.datasets) throw appUnavailable('This server has no knowledge retrieval, so the app\'s datasets (model_config.agent_mode.tools) cannot be searched.');
    const cited = { resources: [] as RetrieverResource[] };
    const datasetBox = cfg && d.datasets ? datasetTools(d.datasets, p.app, cfg, await d.datasets.datasets(p.app, cfg), cited) : undefined;
    const emit = emitter(this.#d, sink, messageId);
    const moderation = d.moderation.outputModeration(p.app, (text, reason) => emit({ type: 'replace', text, reason }));
    return this.#start(p, messageId, async ({ taskId, controller }) => {
      const { signal } = controller;
      const limitS = d.config.appMaxExecutionSeconds;
      const timer = setTimeout(() => controller.abort(new ExecutionTimeout(`generation exceeded APP_MAX_EXECUTION_TIME (${limitS} s)`)), limitS * 1000);
      timer.unref();
      const inserted = d.messages.insert(this.#newMessage(p, ids, taskId), conversation);
      inserted.catch(() => undefined);
      const insert = () => inserted;
      const own = agentModeOf(p.app);
      const mode = datasetBox ? { ...own, tools: [...own.tools, ...datasetBox.specs] } : own;
      const labels = Object.fromEntries(mode.tools.flatMap((t) => [[t.ref.toolName, t.label]] as const));
      const recorder = new AgentThoughtRecorder(messageId, { now: () => d.clock.now(), newId }, labels, (t) => emit({ type: 'thought', thought: agentThoughtEvent(t) }));
      const instruction = renderTemplate(p.prePrompt, prompt.inputs);
      let answer = '';
      let reported: ProviderUsage | undefined;
      let status: CompletionOutcome['status'] = 'normal';
      let error: ServiceError | undefined;
      const live = d.leases.track(messageId);
      moderation?.whenReplaced(() => controller.abort(new OutputModerated('output moderation replaced the answer')));
      try {
        // the row exists before a frame names the message
        await inserted;
        emit({ type: 'sent' });
        const result = await runAgentTurn(
          {
            providers: d.providers,
            // workflow tools and tool files belong to the answer's app and end user (the message stands for the run)
            tools: withDatasets(datasetBox, d.tools && withCaller(d.tools, { workspaceId: p.app.workspaceId, appId: p.app.id, runId: messageId, endUserId: p.endUserId, user: p.user, callDepth: 0 })),
            priceOf: (m) => d.config.prices[m], maxIterations: d.config.runs.agentMaxIterations, now: () => d.clock.now(), newId },
          {
            appName: p.app.name,
            mode,
            model: p.model,
            instruction,
            history,
            query: prompt.query,
            signal,
            recorder,
            onText: (text) => {
              answer += text;
              live.answer = answer;
              // once moderation has put the preset response in the answer's place, no more text is sent
              if (moderation && !moderation.append(text)) return;
              emit({ type: 'message', text, agent: true });
            },
          },
        );
        if (signal.aborted) throw signal.reason;
        reported = { promptTokens: result.promptTokens, completionTokens: result.completionTokens };
        answer = result.text;
      } catch (err) {
        ({ status, error } = failure(this.#d, err, signal));
      } finally {
        clearTimeout(timer);
        live.end();
      }
      return conclude(this.#d, {
        model: p.model,
        startedAt: p.startedAt,
        messageId,
        insert,
        emit,
        answer,
        reported,
        promptText: [instruction, ...history.flatMap((h) => [h.query, h.answer]), prompt.query].join('\n'),
        status,
        error,
        before: () => d.thoughts.save(recorder.thoughts),
        moderation,
        retrieverResources: showsCitations(p.app) ? cited.resources : undefined,
      });
    });
  }
}

/** The app shows its answers' citations (`retriever_resource.enabled`, Dify's `show_retrieve_source`). */
function showsCitations(app: App): boolean {
  const rr = appFeatures(app).retriever_resource;
  return isObject(rr) && rr.enabled === true;
}

/** An input's value as a search query (`dataset_query_variable`). */
function asQuery(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}

/** The agent's tool runtime with its dataset retriever tools, when it has any. */
function withDatasets(box: ReturnType<typeof datasetTools> | undefined, tools: ToolRuntime | undefined): ToolRuntime | undefined {
  return box ? box.tools(tools) : tools;
}
