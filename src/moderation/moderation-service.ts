import type { App } from '../apps/app-service.js';
import { invalidParam, ServiceError } from '../infra/errors.js';
import { isObject } from '../infra/objects.js';
import type { Logger } from '../infra/logger.js';
import type { ModelProviders } from '../llm/model-provider.js';
import type { ApiExtensionClient, ExtensionRef } from './api-extension-client.js';
import type { ModerationConfig } from './moderation-config.js';
import { externalDataToolsOf, moderationRuleOf, type ModerationRule } from './moderation-rule.js';
import { OutputModeration, type OutputVerdict } from './output-moderation.js';

/** What input moderation decided: go on to the model (with inputs and query, replaced if `overridden`), or answer `answer` instead. */
export type InputVerdict =
  | { readonly type: 'pass'; readonly inputs: Record<string, unknown>; readonly query: string }
  | { readonly type: 'direct'; readonly answer: string };

export interface ModerationDeps {
  readonly config: ModerationConfig;
  readonly providers: ModelProviders;
  readonly extensions: ApiExtensionClient;
  readonly logger: Logger;
}

/** Dify's `openai_moderation` sends at most this many characters per text and this many texts per request. */
const OPENAI_CHUNK_CHARS = 2000;
const OPENAI_CHUNKS_PER_REQUEST = 32;

const SWA_EXTENSION = 'sensitive_word_avoidance.config.api_based_extension_id';

/** A value as Python's `str()` shows it to a keyword match, near enough: strings as they are, the rest as JSON. */
function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return String(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Dify's KeywordsModeration: any keyword in any value, case-insensitive substring. */
function hasKeyword(keywords: readonly string[], values: readonly unknown[]): boolean {
  const lowered = keywords.map((k) => k.toLowerCase());
  return values.some((v) => {
    const t = text(v).toLowerCase();
    return lowered.some((k) => t.includes(k));
  });
}

function action(v: unknown): 'direct_output' | 'overridden' {
  return v === 'overridden' ? 'overridden' : 'direct_output';
}

/**
 * Dify's moderation of model-config apps (`sensitive_word_avoidance`: `keywords`,
 * `openai_moderation`, `api`) and its `external_data_tools`, both through Dify's API-based
 * extension protocol where an extension is named.
 */
export class ModerationService {
  readonly #d: ModerationDeps;

  constructor(deps: ModerationDeps) {
    this.#d = deps;
  }

  /** The app's moderation, or undefined when it has none; a type Dovetail does not run is a 400 naming it. */
  #rule(app: App): ModerationRule | undefined {
    const rule = moderationRuleOf(app.dsl);
    if (rule?.type === 'unknown') throw invalidParam(`sensitive_word_avoidance.type "${rule.name}" is not supported here (keywords, openai_moderation or api)`);
    return rule;
  }

  /** Whether the app has moderation on (a type Dovetail does not run included: using it fails naming it). */
  enabled(app: App): boolean {
    return moderationRuleOf(app.dsl) !== undefined;
  }

  /**
   * Dify's input moderation of `inputs` and `query` before the model: flagged with `direct_output`
   * → the preset response answers; `overridden` → the extension's inputs and query go on. A check
   * that cannot run (a missing extension, an upstream failure) is a 400 naming it.
   */
  async checkInputs(app: App, inputs: Record<string, unknown>, query: string, signal?: AbortSignal): Promise<InputVerdict> {
    const rule = this.#rule(app);
    const pass = { type: 'pass', inputs, query } as const;
    if (!rule || !rule.inputs.enabled) return pass;
    const values = [...Object.values(inputs), ...(query ? [query] : [])];
    if (rule.type === 'keywords') {
      return hasKeyword(rule.keywords, values) ? { type: 'direct', answer: rule.inputs.presetResponse } : pass;
    }
    if (rule.type === 'openai_moderation') {
      return (await this.#openaiFlags(values.map(text).join('\n'), signal)) ? { type: 'direct', answer: rule.inputs.presetResponse } : pass;
    }
    const r = await this.#d.extensions.call(this.#ref(rule.extensionId), 'app.moderation.input', { app_id: app.id, inputs, query }, signal);
    if (r.flagged !== true) return pass;
    if (action(r.action) === 'direct_output') return { type: 'direct', answer: typeof r.preset_response === 'string' ? r.preset_response : '' };
    // Dify's ModerationInputsResult: what the extension leaves out is empty
    return { type: 'pass', inputs: isObject(r.inputs) ? r.inputs : {}, query: typeof r.query === 'string' ? r.query : '' };
  }

  /**
   * The output moderation of one answer, when the app has moderation (Dify's pipeline keeps one
   * whenever `sensitive_word_avoidance` is on, checking only when `outputs_config.enabled`).
   * `onReplace` receives each replacement of the answer so far. A check that fails is logged and
   * replaces nothing (as Dify).
   */
  outputModeration(app: App, onReplace: (answer: string, reason: string) => void): OutputModeration | undefined {
    const rule = this.#rule(app);
    if (!rule) return undefined;
    if (rule.type === 'api' && rule.outputs.enabled) this.#d.extensions.extension(this.#ref(rule.extensionId));
    const check = async (t: string): Promise<OutputVerdict | undefined> => {
      if (!rule.outputs.enabled) return undefined;
      try {
        return await this.#checkOutput(app, rule, t);
      } catch (err) {
        this.#d.logger.warn({ err, appId: app.id, moderation: rule.type }, 'output moderation failed; the answer is left as it is');
        return undefined;
      }
    };
    return new OutputModeration(check, this.#d.config.bufferSize, onReplace);
  }

  async #checkOutput(app: App, rule: ModerationRule, t: string): Promise<OutputVerdict> {
    const preset = { flagged: true, action: 'direct_output', presetResponse: rule.outputs.presetResponse, text: t } as const;
    if (rule.type === 'keywords') return hasKeyword(rule.keywords, [t]) ? preset : { ...preset, flagged: false };
    if (rule.type === 'openai_moderation') return (await this.#openaiFlags(t)) ? preset : { ...preset, flagged: false };
    const r = await this.#d.extensions.call(this.#ref(rule.extensionId), 'app.moderation.output', { app_id: app.id, text: t });
    return {
      flagged: r.flagged === true,
      action: action(r.action),
      presetResponse: typeof r.preset_response === 'string' ? r.preset_response : '',
      text: typeof r.text === 'string' ? r.text : '',
    };
  }

  /**
   * Dify's external data tools: each enabled `external_data_tools` entry asks its API-based
   * extension (`app.external_data_tool.query`) for its variable's value, all at once; the answers'
   * `result` strings fill `inputs`. A failure is a 400 naming the variable.
   */
  async fillExternalData(app: App, inputs: Record<string, unknown>, query: string, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const tools = externalDataToolsOf(app.dsl);
    if (tools.length === 0) return inputs;
    const results = await Promise.all(
      tools.map(async (t) => {
        const where = `external_data_tools[${t.index}]`;
        if (t.type !== 'api') throw invalidParam(`${where}.type "${t.type}" is not supported here (api)`);
        if (t.variable === '') throw invalidParam(`${where}.variable is required`);
        const fail = (why: string) => invalidParam(`[External data tool] API query failed, variable: ${t.variable}, error: ${why}`);
        let r: Record<string, unknown>;
        try {
          r = await this.#d.extensions.call({ id: t.extensionId, setting: `${where}.config.api_based_extension_id` }, 'app.external_data_tool.query', { app_id: app.id, tool_variable: t.variable, inputs, query }, signal);
        } catch (err) {
          if (err instanceof ServiceError) throw fail(err.message);
          throw err;
        }
        if (!('result' in r)) throw fail('result not found in response');
        if (typeof r.result !== 'string') throw fail('result is not string');
        return [t.variable, r.result] as const;
      }),
    );
    return { ...inputs, ...Object.fromEntries(results) };
  }

  #ref(id: string): ExtensionRef {
    return { id, setting: SWA_EXTENSION };
  }

  /** Dify's `openai_moderation`: the `openai` provider's moderation endpoint, in chunks of 2000 characters. */
  async #openaiFlags(t: string, signal?: AbortSignal): Promise<boolean> {
    const provider = this.#d.providers.get('openai');
    if (!provider.moderate) throw invalidParam('sensitive_word_avoidance.type openai_moderation needs the openai provider\'s moderation endpoint, which this provider does not offer');
    const chunks: string[] = [];
    for (let i = 0; i < t.length; i += OPENAI_CHUNK_CHARS) chunks.push(t.slice(i, i + OPENAI_CHUNK_CHARS));
    if (chunks.length === 0) return false;
    for (let i = 0; i < chunks.length; i += OPENAI_CHUNKS_PER_REQUEST) {
      const flagged = await provider.moderate({ model: this.#d.config.openaiModel, texts: chunks.slice(i, i + OPENAI_CHUNKS_PER_REQUEST), ...(signal ? { signal } : {}) });
      if (flagged) return true;
    }
    return false;
  }
}
