import type { DslDocument } from '../apps/dsl.js';
import { isObject, objectOf } from '../infra/objects.js';

/** Dify's moderation types (`sensitive_word_avoidance.type`) Dovetail runs. */
export const MODERATION_TYPES = ['keywords', 'openai_moderation', 'api'] as const;
export type ModerationType = (typeof MODERATION_TYPES)[number];

/** `inputs_config` / `outputs_config`: whether that side is checked, and the answer when it is flagged. */
export interface ModerationSide {
  readonly enabled: boolean;
  /** `preset_response`; the `api` type may leave it to the extension's answer. */
  readonly presetResponse: string;
}

interface RuleBase {
  readonly inputs: ModerationSide;
  readonly outputs: ModerationSide;
}

/** An app's enabled `sensitive_word_avoidance`, by type. */
export type ModerationRule =
  | (RuleBase & { readonly type: 'keywords'; readonly keywords: readonly string[] })
  | (RuleBase & { readonly type: 'openai_moderation' })
  | (RuleBase & { readonly type: 'api'; readonly extensionId: string });

/** A `sensitive_word_avoidance` that is enabled with a type Dovetail does not run (a custom code-based extension). */
export interface UnknownModeration {
  readonly type: 'unknown';
  readonly name: string;
}

/** One enabled entry of `external_data_tools` (model-config apps): the API-based extension that fills `variable`. */
export interface ExternalDataTool {
  readonly index: number;
  readonly variable: string;
  readonly type: string;
  /** `config.api_based_extension_id` (type `api`). */
  readonly extensionId: string;
}

/** Where an app keeps its features: a workflow's `features`, else `model_config` (as `appFeatures`). */
function features(doc: Pick<DslDocument, 'workflow' | 'model_config'>): Record<string, unknown> {
  return doc.workflow ? objectOf(doc.workflow.features) : objectOf(doc.model_config);
}

function side(v: unknown): ModerationSide {
  const o = objectOf(v);
  return { enabled: o.enabled === true, presetResponse: typeof o.preset_response === 'string' ? o.preset_response : '' };
}

/**
 * The app's moderation, when `sensitive_word_avoidance.enabled`: its type, the keyword list (one a
 * line, blank lines dropped, as Dify's KeywordsModeration) and both sides; `unknown` for a type
 * Dovetail does not run; undefined when moderation is off.
 */
export function moderationRuleOf(doc: Pick<DslDocument, 'workflow' | 'model_config'>): ModerationRule | UnknownModeration | undefined {
  const swa = objectOf(features(doc).sensitive_word_avoidance);
  if (swa.enabled !== true) return undefined;
  const type = typeof swa.type === 'string' ? swa.type : '';
  const config = objectOf(swa.config);
  const base = { inputs: side(config.inputs_config), outputs: side(config.outputs_config) };
  if (type === 'keywords') {
    const raw = typeof config.keywords === 'string' ? config.keywords : Array.isArray(config.keywords) ? config.keywords.filter((k) => typeof k === 'string').join('\n') : '';
    return { type, ...base, keywords: raw.split('\n').filter((k) => k !== '') };
  }
  if (type === 'openai_moderation') return { type, ...base };
  if (type === 'api') return { type, ...base, extensionId: typeof config.api_based_extension_id === 'string' ? config.api_based_extension_id : '' };
  return { type: 'unknown', name: type };
}

/** The enabled `external_data_tools` of a model-config app (chatflows have none: Dify keeps them in `model_config`). */
export function externalDataToolsOf(doc: Pick<DslDocument, 'workflow' | 'model_config'>): ExternalDataTool[] {
  if (doc.workflow) return [];
  const list = objectOf(doc.model_config).external_data_tools;
  if (!Array.isArray(list)) return [];
  const out: ExternalDataTool[] = [];
  for (const [index, t] of list.entries()) {
    if (!isObject(t) || t.enabled !== true) continue;
    const config = objectOf(t.config);
    out.push({
      index,
      variable: typeof t.variable === 'string' ? t.variable : '',
      type: typeof t.type === 'string' ? t.type : '',
      extensionId: typeof config.api_based_extension_id === 'string' ? config.api_based_extension_id : '',
    });
  }
  return out;
}
