import type { DslDocument } from '../apps/dsl.js';
import type { ImportWarning } from '../engine/types.js';
import type { ApiBasedExtension } from './moderation-config.js';
import { externalDataToolsOf, moderationRuleOf } from './moderation-rule.js';

/**
 * What an app's moderation and external data tools need that this server lacks: API-based
 * extensions missing from `api_based_extensions` in dovetail.yaml, a moderation type Dovetail does
 * not run, and (`openai_moderation`) an `openai` provider that cannot be called (`openaiProblem`,
 * the registry's message, or null when it can).
 */
export function moderationWarnings(doc: DslDocument, extensions: readonly ApiBasedExtension[], openaiProblem: () => string | null): ImportWarning[] {
  const out: ImportWarning[] = [];
  const mode = doc.app.mode;
  const known = new Set(extensions.map((e) => e.id));
  const missing = (where: string, id: string) => {
    const what = id === '' ? 'names no API-based extension' : `names API-based extension "${id}", which is not configured here`;
    out.push({ node_id: where, node_type: mode, part: `API-based extension "${id}"`, setting: 'api_based_extensions', message: `${where} (${mode}): ${what}: add it to api_based_extensions in dovetail.yaml` });
  };
  const rule = moderationRuleOf(doc);
  const swa = 'sensitive_word_avoidance';
  if (rule?.type === 'unknown') {
    out.push({ node_id: swa, node_type: mode, part: `moderation type "${rule.name}"`, setting: null, message: `${swa} (${mode}): moderation type "${rule.name}" is not supported here (keywords, openai_moderation or api); requests will fail until it is changed` });
  } else if (rule?.type === 'api' && !known.has(rule.extensionId)) {
    missing(`${swa}.config.api_based_extension_id`, rule.extensionId);
  } else if (rule?.type === 'openai_moderation' && (rule.inputs.enabled || rule.outputs.enabled)) {
    const problem = openaiProblem();
    if (problem) out.push({ node_id: swa, node_type: mode, part: 'model provider "openai" (moderation)', setting: 'OPENAI_API_KEY', message: `${swa} (${mode}): openai_moderation calls the openai provider's moderation endpoint: ${problem}` });
  }
  for (const t of externalDataToolsOf(doc)) {
    const where = `external_data_tools[${t.index}]`;
    if (t.type !== 'api') out.push({ node_id: where, node_type: mode, part: `external data tool type "${t.type}"`, setting: null, message: `${where} (${mode}): type "${t.type}" is not supported here (api)` });
    else if (!known.has(t.extensionId)) missing(`${where}.config.api_based_extension_id`, t.extensionId);
  }
  return out;
}
