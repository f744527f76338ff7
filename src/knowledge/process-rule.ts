import { invalidParam } from '../infra/errors.js';

export interface ProcessRule {
  readonly mode: 'automatic' | 'custom';
  readonly removeExtraSpaces: boolean;
  readonly removeUrlsEmails: boolean;
  readonly separator: string;
  readonly maxTokens: number;
  readonly chunkOverlap: number;
}

/** Dify's `DatasetProcessRule.AUTOMATIC_RULES`. */
export const AUTOMATIC_RULE: ProcessRule = {
  mode: 'automatic',
  removeExtraSpaces: true,
  removeUrlsEmails: false,
  separator: '\n',
  maxTokens: 500,
  chunkOverlap: 50,
};

const MIN_TOKENS = 50;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates Dify's `process_rule` object (`mode` automatic | custom | hierarchical, `rules`
 * with `pre_processing_rules` and `segmentation`). Errors are 400 invalid_param naming the field.
 */
export function parseProcessRule(raw: unknown, maxSegmentationTokens: number): ProcessRule {
  if (raw === undefined || raw === null) return AUTOMATIC_RULE;
  if (!isObject(raw)) throw invalidParam('process_rule must be an object.');
  const mode = raw.mode;
  if (mode === undefined || mode === 'automatic') return AUTOMATIC_RULE;
  if (mode !== 'custom' && mode !== 'hierarchical') throw invalidParam('process_rule.mode is invalid: use automatic or custom.');
  if (mode === 'hierarchical') throw invalidParam('process_rule.mode hierarchical is not supported; use automatic or custom.');
  const rules = raw.rules;
  if (!isObject(rules)) throw invalidParam('process_rule.rules is required when mode is custom.');
  const pre = rules.pre_processing_rules ?? [];
  if (!Array.isArray(pre)) throw invalidParam('process_rule.rules.pre_processing_rules must be a list.');
  let removeExtraSpaces = false;
  let removeUrlsEmails = false;
  for (const [i, r] of pre.entries()) {
    if (!isObject(r) || typeof r.id !== 'string') throw invalidParam(`process_rule.rules.pre_processing_rules[${i}].id is required.`);
    if (typeof r.enabled !== 'boolean') throw invalidParam(`process_rule.rules.pre_processing_rules[${i}].enabled must be a boolean.`);
    if (r.id === 'remove_extra_spaces') removeExtraSpaces = r.enabled;
    else if (r.id === 'remove_urls_emails') removeUrlsEmails = r.enabled;
    else throw invalidParam(`process_rule.rules.pre_processing_rules[${i}].id is invalid: use remove_extra_spaces or remove_urls_emails.`);
  }
  const seg = rules.segmentation;
  if (!isObject(seg)) throw invalidParam('process_rule.rules.segmentation is required.');
  const separator = seg.separator ?? '\n';
  if (typeof separator !== 'string') throw invalidParam('process_rule.rules.segmentation.separator must be a string.');
  const maxTokens = seg.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens)) {
    throw invalidParam('process_rule.rules.segmentation.max_tokens is required and must be an integer.');
  }
  if (maxTokens < MIN_TOKENS || maxTokens > maxSegmentationTokens) {
    throw invalidParam(`process_rule.rules.segmentation.max_tokens must be between ${MIN_TOKENS} and ${maxSegmentationTokens}.`);
  }
  const overlap = seg.chunk_overlap ?? 0;
  if (typeof overlap !== 'number' || !Number.isInteger(overlap) || overlap < 0) {
    throw invalidParam('process_rule.rules.segmentation.chunk_overlap must be a non-negative integer.');
  }
  if (overlap >= maxTokens) throw invalidParam('process_rule.rules.segmentation.chunk_overlap must be smaller than max_tokens.');
  return {
    mode: 'custom',
    removeExtraSpaces,
    removeUrlsEmails,
    // Clients send the separator JSON-escaped ("\\n"), as Dify's console does.
    separator: separator.replace(/\\n/g, '\n').replace(/\\t/g, '\t') || '\n',
    maxTokens,
    chunkOverlap: overlap,
  };
}

/** Dify's wire shape of a rule. */
export function processRuleToWire(rule: ProcessRule): Record<string, unknown> {
  return {
    mode: rule.mode,
    rules: {
      pre_processing_rules: [
        { id: 'remove_extra_spaces', enabled: rule.removeExtraSpaces },
        { id: 'remove_urls_emails', enabled: rule.removeUrlsEmails },
      ],
      segmentation: { separator: rule.separator, max_tokens: rule.maxTokens, chunk_overlap: rule.chunkOverlap },
    },
  };
}
