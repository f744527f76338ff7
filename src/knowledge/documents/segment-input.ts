import { invalidParam } from '../../infra/errors.js';

/** One segment to create (`POST …/segments`, an item of `segments`). */
export interface NewSegment {
  readonly content: string;
  readonly answer: string | undefined;
  readonly keywords: readonly string[] | undefined;
}

/** A segment update (`POST …/segments/{id}`, the `segment` object); absent fields keep their value. */
export interface SegmentPatch {
  readonly content: string | undefined;
  readonly answer: string | undefined;
  readonly keywords: readonly string[] | undefined;
  readonly enabled: boolean | undefined;
  readonly regenerateChildChunks: boolean;
}

export interface SegmentQuery {
  readonly page: number;
  readonly limit: number;
  readonly keyword: string | undefined;
  readonly status: readonly string[];
  /** Only enabled (true) or disabled (false) segments; all when absent (Dify's console `enabled=all`). */
  readonly enabled?: boolean;
}

/** Reads the `segments` list of a create request, naming the item and field in errors. */
export function parseNewSegments(body: Record<string, unknown>, maxItems: number, maxChars: number): NewSegment[] {
  const list = body.segments;
  if (list === undefined || list === null) throw invalidParam('segments is required.');
  if (!Array.isArray(list)) throw invalidParam('segments must be a list of segment objects.');
  if (list.length === 0) throw invalidParam('segments must have at least 1 item.');
  if (list.length > maxItems) throw invalidParam(`Exceeded maximum segments limit of ${maxItems}.`);
  return list.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalidParam(`segments[${i}] must be an object.`);
    const o = item as Record<string, unknown>;
    if (typeof o.content !== 'string' || o.content.trim() === '') throw invalidParam(`Content is empty (segments[${i}].content).`);
    return {
      content: text(o.content, `segments[${i}].content`, maxChars),
      answer: o.answer === undefined || o.answer === null ? undefined : text(o.answer, `segments[${i}].answer`, maxChars),
      keywords: keywords(o.keywords, `segments[${i}].keywords`),
    };
  });
}

/** Reads the `segment` object of an update request. */
export function parseSegmentPatch(body: Record<string, unknown>, maxChars: number): SegmentPatch {
  const s = body.segment;
  if (typeof s !== 'object' || s === null || Array.isArray(s)) throw invalidParam('segment is required and must be an object.');
  const o = s as Record<string, unknown>;
  const bool = (name: string): boolean | undefined => {
    const v = o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') throw invalidParam(`segment.${name} must be a boolean.`);
    return v;
  };
  let content: string | undefined;
  // As Dify (`args.content or segment.content`): an empty content keeps the current one.
  if (o.content !== undefined && o.content !== null && o.content !== '') {
    content = text(o.content, 'segment.content', maxChars);
    if (content.trim() === '') throw invalidParam('Content is empty (segment.content).');
  }
  return {
    content,
    answer: o.answer === undefined || o.answer === null ? undefined : text(o.answer, 'segment.answer', maxChars),
    keywords: keywords(o.keywords, 'segment.keywords'),
    enabled: bool('enabled'),
    regenerateChildChunks: bool('regenerate_child_chunks') ?? false,
  };
}

function text(v: unknown, field: string, maxChars: number): string {
  if (typeof v !== 'string') throw invalidParam(`${field} must be a string.`);
  if (v.length > maxChars) throw invalidParam(`${field} must be at most ${maxChars} characters (KNOWLEDGE_SEGMENT_MAX_CHARS).`);
  return v;
}

function keywords(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((k) => typeof k !== 'string')) throw invalidParam(`${field} must be a list of strings.`);
  return v as string[];
}

/** The `content` of a child chunk create or update. */
export function parseChildContent(body: Record<string, unknown>, maxChars: number): string {
  if (typeof body.content !== 'string' || body.content.trim() === '') throw invalidParam('content is required and must be a non-empty string.');
  return text(body.content, 'content', maxChars);
}
