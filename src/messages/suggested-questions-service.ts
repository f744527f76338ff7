import type { App } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import { notChatApp } from '../apps/errors.js';
import type { SuggestedQuestionsConfig } from '../config.js';
import { badRequest, invalidParam, notFound } from '../infra/errors.js';
import type { Logger } from '../infra/logger.js';
import { splitModelRef, type ModelProvider, type ModelProviders } from '../llm/model-provider.js';
import type { MessageStore } from './message-store.js';
import type { TextOffload } from '../text/offload.js';
import { historyText, parseSuggestedQuestions, suggestedQuestionsPrompt, type HistoryTurn } from './suggested-questions.js';
import { objectOf } from '../infra/objects.js';
import { isUuid } from '../infra/ids.js';
import { appFeatures } from '../apps/parameters.js';

/** App modes Dify answers this endpoint for. */
const CHAT_MODES: ReadonlySet<string> = new Set(['chat', 'agent-chat', 'advanced-chat']);

export interface SuggestedQuestionsDeps {
  readonly config: SuggestedQuestionsConfig;
  readonly logger: Logger;
  readonly providers: ModelProviders;
  readonly messages: MessageStore;
  readonly endUsers: EndUserService;
  /** Token counting off the event loop for large histories. */
  readonly offload: TextOffload;
}

/** A model to ask and the parameters to ask it with. */
interface ModelChoice {
  readonly provider: string;
  readonly name: string;
  readonly mode: 'chat' | 'completion';
  readonly params: Record<string, unknown>;
}

/** A DSL `model` mapping (`provider`, `name`, `mode`, `completion_params`), or undefined. */
function dslModel(v: unknown): Omit<ModelChoice, 'params'> & { completionParams: Record<string, unknown> } | undefined {
  const m = objectOf(v);
  if (typeof m.provider !== 'string' || typeof m.name !== 'string' || m.name === '') return undefined;
  return { provider: m.provider, name: m.name, mode: m.mode === 'completion' ? 'completion' : 'chat', completionParams: objectOf(m.completion_params) };
}

/** Dify's `_normalize_completion_params`: non-positive token limits are dropped. */
function normalizedParams(params: Record<string, unknown>): Record<string, unknown> {
  const out = { ...params };
  for (const k of ['max_tokens', 'max_output_tokens']) if (typeof out[k] === 'number' && (out[k] as number) <= 0) delete out[k];
  return out;
}

/**
 * `GET /messages/{message_id}/suggested`: up to a few follow-up questions after an answer, as
 * Dify's `MessageService.get_suggested_questions_after_answer` asks a model for them. Refusals
 * (not a chat app, unknown message, feature disabled) are errors; every model problem (none
 * configured, provider failure, timeout, unparsable output) is an empty list, as in Dify.
 */
export class SuggestedQuestionsService {
  readonly #d: SuggestedQuestionsDeps;

  constructor(deps: SuggestedQuestionsDeps) {
    this.#d = deps;
  }

  async suggest(app: App, messageId: string, user: string | undefined): Promise<string[]> {
    const d = this.#d;
    // Dify's order: the user argument, the app mode, the message, then the feature switch.
    if (user === undefined || user === '') throw invalidParam('Arg user must be provided.');
    if (!CHAT_MODES.has(app.mode)) throw notChatApp();
    const endUser = await d.endUsers.find(app.id, user);
    const message = endUser && isUuid(messageId) ? await d.messages.findOwned(messageId, app.id, endUser.id) : undefined;
    if (!message || !message.conversationId) throw notFound('Message Not Exists.');
    const feature = objectOf(appFeatures(app).suggested_questions_after_answer);
    if (feature.enabled !== true) throw badRequest('Suggested Questions Is Disabled.');

    const chosen = this.#model(app, feature.model);
    if (!chosen) return [];
    const turns = await this.#history(message.conversationId);
    const prompt = suggestedQuestionsPrompt(await historyText(turns, d.config.historyMaxTokens, (t) => d.offload.countTokens(t)), typeof feature.prompt === 'string' ? feature.prompt : undefined);
    let text = '';
    try {
      const chunks = chosen.provider.stream({
        model: chosen.model.name,
        mode: chosen.model.mode,
        messages: [{ role: 'user', content: prompt }],
        prompt,
        params: chosen.model.params,
        signal: AbortSignal.timeout(d.config.timeoutSeconds * 1000),
      });
      for await (const c of chunks) if (c.type === 'text') text += c.text;
    } catch (err) {
      d.logger.warn({ err, appId: app.id, messageId }, 'suggested questions: the model call failed');
      return [];
    }
    return parseSuggestedQuestions(text);
  }

  /**
   * The model Dify would ask: the feature's own `model` (with its `completion_params`), else the
   * workspace default model with Dify's tuning (`max_tokens` 256, `temperature` 0). Dovetail's
   * stand-in for the default model is `SUGGESTED_QUESTIONS_MODEL`, else the app's model (a chat
   * app's `model_config.model`, a chatflow's first LLM node). A model whose provider cannot be
   * used falls through to the next; with none left there is nothing to ask.
   */
  #model(app: App, featureModel: unknown): { provider: ModelProvider; model: ModelChoice } | undefined {
    const d = this.#d;
    const tuning = { max_tokens: d.config.maxTokens, temperature: 0 };
    const candidates: ModelChoice[] = [];
    const own = dslModel(featureModel);
    if (own) candidates.push({ ...own, params: normalizedParams(own.completionParams) });
    const ref = d.config.model ? splitModelRef(d.config.model) : undefined;
    if (ref) candidates.push({ provider: ref.provider, name: ref.model, mode: 'chat', params: tuning });
    else {
      const llmNode = app.dsl.workflow?.graph.nodes.find((n) => n.data.type === 'llm');
      const appModel = dslModel(llmNode ? llmNode.data.model : app.dsl.model_config?.model);
      if (appModel) candidates.push({ ...appModel, params: tuning });
    }
    for (const model of candidates) {
      try {
        return { provider: d.providers.get(model.provider), model };
      } catch (err) {
        d.logger.warn({ err, provider: model.provider, model: model.name }, 'suggested questions: model unavailable');
      }
    }
    return undefined;
  }

  /** The conversation's latest messages, oldest first; a newest one still without an answer is left out. */
  async #history(conversationId: string): Promise<HistoryTurn[]> {
    const rows = await this.#d.messages.listByConversation(conversationId, { limit: this.#d.config.historyMessages });
    if (rows[0] && rows[0].answer === '' && rows[0].completionTokens === 0) rows.shift();
    return rows.reverse().map((m) => ({ query: m.query, answer: m.answer }));
  }
}
