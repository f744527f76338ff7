import { invalidParam } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';

export interface ProcessRule {
  readonly mode: 'automatic' | 'custom' | 'hierarchical';
  readonly removeExtraSpaces: boolean;
  readonly removeUrlsEmails: boolean;
  /** Segments, or the parents of `paragraph` parent-child chunking. */
  readonly separator: string;
  readonly maxTokens: number;
  readonly chunkOverlap: number;
  /** Parent-child chunking (mode `hierarchical`). */
  readonly hierarchy?: Hierarchy;
}

export interface Hierarchy {
  /** `paragraph`: parents split by the rule's segmentation; `full-doc`: the whole document is one parent. */
  readonly parentMode: 'paragraph' | 'full-doc';
  /** `subchunk_segmentation`: how each parent is split into the children that are indexed. */
  readonly child: { readonly separator: string; readonly maxTokens: number; readonly chunkOverlap: number };
}

/** Dify console's parent-child defaults: paragraphs (`\n\n`, 1024 tokens) with line children (`\n`, 512). */
export function defaultHierarchicalRule(maxSegmentationTokens: number): ProcessRule {
  return {
    mode: 'hierarchical',
    removeExtraSpaces: true,
    removeUrlsEmails: false,
    separator: '\n\n',
    maxTokens: Math.min(1024, maxSegmentationTokens),
    chunkOverlap: 0,
    hierarchy: { parentMode: 'paragraph', child: { separator: '\n', maxTokens: Math.min(512, maxSegmentationTokens), chunkOverlap: 0 } },
  };
}

/** The rule that splits a parent into its children. */
export function childRule(rule: ProcessRule): ProcessRule {
  const c = rule.hierarchy?.child;
  return c ? { ...rule, separator: c.separator, maxTokens: c.maxTokens, chunkOverlap: c.chunkOverlap, hierarchy: undefined } : rule;
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

/** Clients send separators JSON-escaped ("\\n"), as Dify's console does. */
function unescape(separator: string, fallback: string): string {
  return separator.replace(/\\n/g, '\n').replace(/\\t/g, '\t') || fallback;
}

interface Segmentation {
  readonly separator: string;
  readonly maxTokens: number;
  readonly chunkOverlap: number;
}

/** `field`: `segmentation` or `subchunk_segmentation`; `maxRequired` false for full-doc parents. */
function parseSegmentation(seg: unknown, field: string, fallbackSeparator: string, maxSegmentationTokens: number, maxRequired = true): Segmentation {
  const name = `process_rule.rules.${field}`;
  if (seg === undefined || seg === null) {
    if (!maxRequired) return { separator: fallbackSeparator, maxTokens: maxSegmentationTokens, chunkOverlap: 0 };
    throw invalidParam(`${name} is required.`);
  }
  if (!isObject(seg)) throw invalidParam(`${name} must be an object.`);
  const separator = seg.separator ?? fallbackSeparator;
  if (typeof separator !== 'string') throw invalidParam(`${name}.separator must be a string.`);
  let maxTokens = seg.max_tokens;
  if (maxTokens === undefined || maxTokens === null) {
    if (maxRequired) throw invalidParam(`${name}.max_tokens is required and must be an integer.`);
    maxTokens = maxSegmentationTokens;
  }
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens)) throw invalidParam(`${name}.max_tokens is required and must be an integer.`);
  if (maxTokens < MIN_TOKENS || maxTokens > maxSegmentationTokens) {
    throw invalidParam(`${name}.max_tokens must be between ${MIN_TOKENS} and ${maxSegmentationTokens}.`);
  }
  const overlap = seg.chunk_overlap ?? 0;
  if (typeof overlap !== 'number' || !Number.isInteger(overlap) || overlap < 0) throw invalidParam(`${name}.chunk_overlap must be a non-negative integer.`);
  if (overlap >= maxTokens) throw invalidParam(`${name}.chunk_overlap must be smaller than max_tokens.`);
  return { separator: unescape(separator, fallbackSeparator), maxTokens, chunkOverlap: overlap };
}

/**
 * Validates Dify's `process_rule` object (`mode` automatic | custom | hierarchical, `rules`
 * with `pre_processing_rules` and `segmentation`; hierarchical adds `parent_mode` and
 * `subchunk_segmentation`). Errors are 400 invalid_param naming the field.
 */
export function parseProcessRule(raw: unknown, maxSegmentationTokens: number): ProcessRule {
  if (raw === undefined || raw === null) return AUTOMATIC_RULE;
  if (!isObject(raw)) throw invalidParam('process_rule must be an object.');
  const mode = raw.mode;
  if (mode === undefined || mode === 'automatic') return AUTOMATIC_RULE;
  if (mode !== 'custom' && mode !== 'hierarchical') throw invalidParam('process_rule.mode is invalid: use automatic, custom or hierarchical.');
  const rules = raw.rules;
  if (!isObject(rules)) throw invalidParam(`process_rule.rules is required when mode is ${mode}.`);
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
  if (mode === 'custom') {
    const seg = parseSegmentation(rules.segmentation, 'segmentation', '\n', maxSegmentationTokens);
    return { mode: 'custom', removeExtraSpaces, removeUrlsEmails, ...seg };
  }
  const parentMode = rules.parent_mode ?? 'paragraph';
  if (parentMode !== 'paragraph' && parentMode !== 'full-doc') throw invalidParam('process_rule.rules.parent_mode must be paragraph or full-doc.');
  const parent = parseSegmentation(rules.segmentation, 'segmentation', '\n\n', maxSegmentationTokens, parentMode === 'paragraph');
  const child = parseSegmentation(rules.subchunk_segmentation, 'subchunk_segmentation', '\n', maxSegmentationTokens);
  if (parentMode === 'paragraph' && child.maxTokens > parent.maxTokens) {
    throw invalidParam('process_rule.rules.subchunk_segmentation.max_tokens must not exceed process_rule.rules.segmentation.max_tokens.');
  }
  return { mode: 'hierarchical', removeExtraSpaces, removeUrlsEmails, ...parent, hierarchy: { parentMode, child } };
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
      ...(rule.hierarchy
        ? {
            parent_mode: rule.hierarchy.parentMode,
            subchunk_segmentation: { separator: rule.hierarchy.child.separator, max_tokens: rule.hierarchy.child.maxTokens, chunk_overlap: rule.hierarchy.child.chunkOverlap },
          }
        : {}),
    },
  };
}
