import type { ChatMessage } from '../ports.js';
import { isObject } from './shared.js';

/** A condition the model found in a query: Dify's `{name, comparison_operator, value}`. */
export interface ExtractedCondition {
  readonly name: string;
  readonly comparison_operator: string;
  readonly value: unknown;
}

const OPERATORS = ['contains', 'not contains', 'start with', 'end with', 'is', 'is not', 'empty', 'not empty', '=', '≠', '>', '<', '≥', '≤', 'before', 'after'];

const INSTRUCTIONS = [
  'You extract metadata conditions from a search query.',
  'You are given the query as "input_text" and the metadata fields a document can have as "metadata_fields" (each with a name and a type: string, number or time).',
  'Name only fields the query itself speaks about, each with the value the query gives and one of these operators:',
  JSON.stringify(OPERATORS) + '.',
  'A time value is a Unix timestamp in seconds (UTC midnight for a date); a number value is a plain number; a string value is the text from the query.',
  'Answer with JSON only: {"metadata_map": [{"metadata_field_name": …, "metadata_field_value": …, "comparison_operator": …}]}, an empty list when the query names none.',
].join('\n');

const EXAMPLE_QUESTION = JSON.stringify({
  input_text: 'Which films came out after 2024-01-01 with a rating above 9?',
  metadata_fields: [
    { name: 'title', type: 'string' },
    { name: 'release_date', type: 'time' },
    { name: 'rating', type: 'number' },
  ],
});
const EXAMPLE_ANSWER = JSON.stringify({
  metadata_map: [
    { metadata_field_name: 'release_date', metadata_field_value: 1704067200, comparison_operator: 'after' },
    { metadata_field_name: 'rating', metadata_field_value: 9, comparison_operator: '>' },
  ],
});

/**
 * The messages of Dify's automatic metadata filtering: instructions, one worked example, then the
 * query with the datasets' fields. Completion-mode models get the same as one text.
 */
export function metadataFilterMessages(query: string, fields: readonly { name: string; type: string }[]): ChatMessage[] {
  return [
    { role: 'system', content: INSTRUCTIONS },
    { role: 'user', content: EXAMPLE_QUESTION },
    { role: 'assistant', content: EXAMPLE_ANSWER },
    { role: 'user', content: JSON.stringify({ input_text: query, metadata_fields: fields }) },
  ];
}

/**
 * Reads the model's answer (JSON, possibly in a Markdown fence or with text around it): the
 * `metadata_map` items that name one of `fields`. Anything unreadable gives no conditions, as Dify
 * (the search then runs unfiltered).
 */
export function parseMetadataMap(answer: string, fields: ReadonlySet<string>): ExtractedCondition[] {
  const start = answer.indexOf('{');
  const end = answer.lastIndexOf('}');
  if (start < 0 || end < start) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.slice(start, end + 1));
  } catch {
    return [];
  }
  const list = isObject(parsed) && Array.isArray(parsed.metadata_map) ? parsed.metadata_map : [];
  return list
    .filter(isObject)
    .filter((item) => typeof item.metadata_field_name === 'string' && fields.has(item.metadata_field_name) && typeof item.comparison_operator === 'string')
    .map((item) => ({ name: item.metadata_field_name as string, comparison_operator: item.comparison_operator as string, value: item.metadata_field_value ?? null }));
}
