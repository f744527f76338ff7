import { internalServerError, ServiceError } from '../infra/errors.js';
import { completionRequestError } from '../llm/errors.js';
import type { ModelProvider, ProviderUsage } from '../llm/model-provider.js';
import { buildUsage } from '../llm/usage.js';
import { NodeFailure } from '../engine/types.js';
import type { buildCompletionPrompt } from './completion-prompt.js';
import type { CompletionDeps, CompletionOutcome, CompletionSink, ModelSettings } from './completion-types.js';
import { StopRequested } from './task-registry.js';
import { OUTPUT_MODERATION_REASON, type OutputModeration } from '../moderation/output-moderation.js';
import type { Cancellation, CancelSource } from '../lib/cancellation.js';
import type { RetrieverResource } from '../engine/retriever-resources.js';

/** A model-config app's generation: the model's answer streamed, its message finished, its end reported. */

/** Raised into the abort signal when a generation runs past `APP_MAX_EXECUTION_TIME`. */
export class ExecutionTimeout extends Error {
override name = 'ExecutionTimeout';
}

/** Raised into the abort signal when output moderation replaced the answer with its preset response: the generation ends normally. */
export class OutputModerated extends Error {
  override name = 'OutputModerated';
}

/** `sink`, guarded: a listener that throws (a broken socket, say) must not change the outcome or lose the message. */
export function emitter(d: CompletionDeps, sink: CompletionSink | undefined, messageId: string): CompletionSink {
  return (ev) => {
    try {
      sink?.(ev);
    } catch (err) {
      d.logger.warn({ err, messageId }, 'stream listener failed');
    }
  };
}

export async function generate(d: CompletionDeps, g: {
  provider: ModelProvider;
  model: ModelSettings;
  prompt: ReturnType<typeof buildCompletionPrompt>;
  controller: Cancellation;
  startedAt: number;
  messageId: string;
  /** Stores the message row (once; later calls return the same promise). */
  insert: () => Promise<void>;
  sink: CompletionSink | undefined;
  /** The answer's output moderation, when the app has moderation. */
  moderation?: OutputModeration | undefined;
  /** The answer's citations (stored with it and sent in its end). */
  retrieverResources?: readonly RetrieverResource[] | undefined;
}): Promise<CompletionOutcome> {
  const cancel = g.controller;
  const emit = emitter(d, g.sink, g.messageId);
  const limitS = d.config.appMaxExecutionSeconds;
  const timer = setTimeout(() => cancel.abort(new ExecutionTimeout(`generation exceeded APP_MAX_EXECUTION_TIME (${limitS} s)`)), limitS * 1000);
  timer.unref();
  let answer = '';
  let reported: ProviderUsage | undefined;
  let status: CompletionOutcome['status'] = 'normal';
  let error: ServiceError | undefined;
  const live = d.leases.track(g.messageId);
  g.moderation?.whenReplaced(() => cancel.abort(new OutputModerated('output moderation replaced the answer')));
  try {
    let sent = false;
    const onSent = () => {
      sent = true;
      void g.insert();
      emit({ type: 'sent' });
    };
    // `signal` is made only for a provider that reads it (see `Cancellation`)
    const chunks = g.provider.stream({
      model: g.model.name,
      mode: g.model.mode,
      messages: g.prompt.messages,
      prompt: g.prompt.text,
      params: g.model.params,
      cancel,
      get signal() {
        return cancel.signal;
      },
      onSent,
    });
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
        // once moderation has put the preset response in the answer's place, the model is not read on
        if (g.moderation && !g.moderation.append(chunk.text)) break;
        emit({ type: 'message', text: chunk.text });
      } else if (chunk.type === 'usage') {
        reported = { ...reported, ...chunk.usage };
      }
      if (cancel.aborted) break;
    }
    if (cancel.aborted) throw cancel.reason;
  } catch (err) {
    ({ status, error } = failure(d, err, cancel));
  } finally {
    clearTimeout(timer);
    live.end();
  }
  return conclude(d, { ...g, emit, answer, reported: status === 'normal' ? reported : undefined, promptText: g.prompt.text, status, error });
}

/**
 * Ends a generation: usage (counted when the provider reported none), the message row finished
 * (with `before`, more rows of the same answer), the `end` event.
 */
export async function conclude(d: CompletionDeps, g: {
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
  /** The answer's output moderation: the stored answer is the one it gives, sent as `replace` first when its last check changed it (as Dify's pipeline). */
  moderation?: OutputModeration | undefined;
  /** The answer's citations (stored with it and sent in its end). */
  retrieverResources?: readonly RetrieverResource[] | undefined;
}): Promise<CompletionOutcome> {
  let { answer } = g;
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
  if (g.moderation && status !== 'error') {
    const checked = await g.moderation.finish(answer);
    answer = checked.answer;
    if (checked.flagged) g.emit({ type: 'replace', text: answer, reason: OUTPUT_MODERATION_REASON });
  }
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
      ...(g.retrieverResources?.length ? { retrieverResources: g.retrieverResources } : {}),
    });
  } catch (err) {
    d.logger.error({ err, messageId: g.messageId }, 'message could not be stored');
    status = 'error';
    error = internalServerError();
  }
  const outcome: CompletionOutcome = { status, answer, usage, error, ...(g.retrieverResources?.length ? { retrieverResources: g.retrieverResources } : {}) };
  g.emit({ type: 'end', outcome });
  return outcome;
}

/** The outcome of a generation that threw: stopped by its owner, timed out, or failed. */
export function failure(d: CompletionDeps, err: unknown, signal: Pick<CancelSource, 'aborted' | 'reason'>): { status: CompletionOutcome['status']; error: ServiceError | undefined } {
  if (signal.aborted && signal.reason instanceof StopRequested) return { status: 'stopped', error: undefined };
  if (signal.aborted && signal.reason instanceof OutputModerated) return { status: 'normal', error: undefined };
  if (signal.aborted && signal.reason instanceof ExecutionTimeout) return { status: 'error', error: completionRequestError(signal.reason.message) };
  if (err instanceof ServiceError) return { status: 'error', error: err };
  // the agent loop's failures (a tool that cannot run here, a model error) carry their message
  if (err instanceof NodeFailure) return { status: 'error', error: completionRequestError(err.message) };
  d.logger.error({ err }, 'completion failed');
  return { status: 'error', error: internalServerError() };
}
