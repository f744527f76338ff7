import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import { ServiceError } from '../infra/errors.js';
import { zeroUsage } from '../messages/annotation-answer.js';
import type { CompletionEvent, CompletionService } from '../messages/completion-service.js';
import type { MessageStore } from '../messages/message-store.js';
import type { ModerationService } from '../moderation/moderation-service.js';
import { startChatflowAnswer } from '../runs/chatflow-answer.js';
import type { ChatflowMessage, ChatflowService } from '../runs/chatflow-service.js';
import { completionRequestError, runNotPickedUp } from '../runs/errors.js';
import type { RunService } from '../runs/run-service.js';
import type { UsageBody } from '../lib/usage.js';
import { notChatCompletionApp, runPaused } from './errors.js';

/** What answering an app through a publishing protocol (OpenAI-compatible, MCP) needs. */
export interface AppAnswerDeps {
  readonly completions: CompletionService;
  readonly chatflow: ChatflowService;
  readonly moderation: ModerationService;
  readonly runs: RunService;
  readonly messages: MessageStore;
  readonly endUsers: EndUserService;
  /** `WORKFLOW_FILE_UPLOAD_LIMIT`. */
  readonly maxFiles: number;
  /** `RUN_QUEUE_WAIT_SECONDS`, named by a run no worker took. */
  readonly queueWaitSeconds: number;
  /** `OPENAI_CONVERSATION_MATCH_WINDOW`. */
  readonly conversationMatchWindow: number;
}

/** One exchange before the query, as the client's message history carries it. */
export interface Exchange {
  readonly query: string;
  readonly answer: string;
}

/** A query to a chat-family or completion app. */
export interface AppAsk {
  readonly app: App;
  /** The end user's `user` string. */
  readonly user: string;
  readonly query: string;
  readonly inputs: Record<string, unknown>;
  /** An explicit conversation to continue (chat-family apps). */
  readonly conversationId?: string | undefined;
  /** The exchange before `query` in the client's history: a conversation ending with it is continued. */
  readonly previous?: Exchange | undefined;
}

export interface AnswerOutcome {
  readonly answer: string;
  readonly usage: UsageBody;
  /** Set when the answer failed after it started. */
  readonly error: ServiceError | undefined;
}

/** A started answer; `done` never rejects. */
export interface StartedAnswer {
  readonly messageId: string;
  /** Undefined for completion apps (no conversation to continue). */
  readonly conversationId: string | undefined;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly done: Promise<AnswerOutcome>;
}

/** Receives the answer's text as it is written; `replace`: output moderation replaced what was sent. */
export type TextSink = (text: string, replace: boolean) => void;

const CHAT_MODES = new Set(['chat', 'agent-chat', 'advanced-chat']);

/**
 * Answers one query of a chat, agent-chat, chatflow or completion app with the services the Dify
 * routes use (the same validation, moderation, annotation reply, conversations and messages), for
 * the protocols Dovetail publishes apps through. Refusals throw before anything starts.
 */
export class AppAnswers {
  readonly #d: AppAnswerDeps;

  constructor(deps: AppAnswerDeps) {
    this.#d = deps;
  }

  /** Starts the answer; `sink` gets its text as it streams (`signal`: the listener went away). */
  async ask(ask: AppAsk, sink?: TextSink, signal?: AbortSignal): Promise<StartedAnswer> {
    const { app: a } = ask;
    if (a.mode !== 'completion' && !CHAT_MODES.has(a.mode)) throw notChatCompletionApp(a.mode);
    const conversationId = ask.conversationId?.trim() || (CHAT_MODES.has(a.mode) && ask.previous ? await this.#conversationEndingWith(a, ask.user, ask.previous) : undefined);
    if (a.mode === 'advanced-chat') return this.#chatflow(ask, conversationId, sink, signal);
    const generationSink = sink ? (ev: CompletionEvent) => forwardText(ev, sink) : undefined;
    if (a.mode === 'completion') {
      const run = await this.#d.completions.start({ app: a, user: ask.user, inputs: ask.inputs, query: ask.query, files: null }, generationSink);
      return { messageId: run.messageId, conversationId: undefined, createdAt: run.createdAt, done: run.done.then((o) => ({ answer: o.answer, usage: o.usage, error: o.error })) };
    }
    // agent-chat answers stream inside; the blocking refusal is the Dify route's, not the service's
    const run = await this.#d.completions.startChat({ app: a, user: ask.user, inputs: ask.inputs, query: ask.query, files: null, conversationId }, generationSink);
    return { messageId: run.messageId, conversationId: run.conversationId, createdAt: run.createdAt, done: run.done.then((o) => ({ answer: o.answer, usage: o.usage, error: o.error })) };
  }

  /**
   * The conversation to continue for a request that names none: among the end user's
   * `OPENAI_CONVERSATION_MATCH_WINDOW` most recently updated conversations of the app, the newest
   * whose latest message has `previous` as its query and (trimmed) answer. None: a new one.
   */
  async #conversationEndingWith(a: App, user: string, previous: Exchange): Promise<string | undefined> {
    const endUser = await this.#d.endUsers.find(a.id, user);
    if (!endUser) return undefined;
    const page = await this.#d.chatflow.conversations(a.id, endUser.id, undefined, this.#d.conversationMatchWindow, '-updated_at');
    const ids = page.data.map((c) => String(c.id));
    const latest = await Promise.all(ids.map((id) => this.#d.messages.listByConversation(id, { limit: 1 })));
    const answer = previous.answer.trim();
    const i = latest.findIndex(([m]) => m !== undefined && m.status === 'normal' && m.query === previous.query && m.answer.trim() === answer);
    return i < 0 ? undefined : ids[i];
  }

  async #chatflow(ask: AppAsk, conversationId: string | undefined, sink: TextSink | undefined, signal: AbortSignal | undefined): Promise<StartedAnswer> {
    const d = this.#d;
    const started = await startChatflowAnswer(
      { chatflow: d.chatflow, moderation: d.moderation, maxFiles: d.maxFiles },
      { app: ask.app, user: ask.user, endUser: () => d.endUsers.getOrCreate(ask.app.id, ask.user), query: ask.query, inputs: ask.inputs, conversationId, files: [] },
    );
    if (started.type === 'direct') {
      const a = started.answer;
      sink?.(a.answer, false);
      return { messageId: a.messageId, conversationId: a.conversationId, createdAt: a.createdAt, done: Promise.resolve({ answer: a.answer, usage: a.usage, error: undefined }) };
    }
    const m = started.message;
    const done = sink ? this.#followRun(m, sink, signal) : this.#awaitRun(m);
    return { messageId: m.messageId, conversationId: m.conversationId, createdAt: m.createdAt, done: done.catch((err: unknown) => failed(err)) };
  }

  /** A chatflow run's answer once it ended (blocking). */
  async #awaitRun(m: ChatflowMessage): Promise<AnswerOutcome> {
    const d = this.#d;
    const end = await m.run.done;
    if (end?.notPickedUp) return failed(runNotPickedUp(d.queueWaitSeconds));
    const run = await d.runs.find(m.run.runId);
    if (run?.status === 'failed') return failed(completionRequestError(run.error ?? ''));
    if (run?.status === 'paused') return failed(runPaused(m.run.runId));
    const msg = await d.chatflow.message(m.messageId);
    return { answer: msg?.answer ?? '', usage: (msg?.usage as unknown as UsageBody | undefined) ?? zeroUsage(), error: undefined };
  }

  /** A chatflow run's answer read from its event log as it streams. */
  async #followRun(m: ChatflowMessage, sink: TextSink, signal: AbortSignal | undefined): Promise<AnswerOutcome> {
    let answer = '';
    let usage = zeroUsage();
    const stop = signal ?? new AbortController().signal;
    for await (const e of this.#d.runs.events(m.run.runId, 0, stop)) {
      const p = e.payload;
      switch (p.event) {
        case 'message':
          answer += String(p.answer ?? '');
          sink(String(p.answer ?? ''), false);
          break;
        case 'message_replace':
          answer = String(p.answer ?? '');
          sink(answer, true);
          break;
        case 'message_end':
          usage = ((p.metadata as { usage?: UsageBody } | undefined)?.usage) ?? usage;
          break;
        case 'workflow_paused':
          return failed(runPaused(m.run.runId));
        case 'error':
          return failed(new ServiceError(String(p.code ?? 'completion_request_error'), Number(p.status ?? 400), String(p.message ?? 'The run failed.')));
        case 'workflow_finished': {
          // a failed chatflow run still sends its `error` event
          if ((p.data as { status?: string } | undefined)?.status !== 'failed') return { answer, usage, error: undefined };
          break;
        }
        default:
          break;
      }
    }
    return { answer, usage, error: undefined };
  }
}

function forwardText(ev: CompletionEvent, sink: TextSink): void {
  if (ev.type === 'message') sink(ev.text, false);
  else if (ev.type === 'replace') sink(ev.text, true);
}

function failed(err: unknown): AnswerOutcome {
  const error = err instanceof ServiceError ? err : completionRequestError(err instanceof Error ? err.message : String(err));
  return { answer: '', usage: zeroUsage(), error };
}
