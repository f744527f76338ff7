import type { FastifyRequest } from 'fastify';
import { invalidParam } from '../../infra/errors.js';

/** The largest `page` of any list: beyond it the row offset would overflow SQL's integers. */
export const PAGE_MAX = 1_000_000;

/** `page` (≥ 1, default 1) and `limit` (1..max, default 20) from the query string, named in errors. */
export function pageParams(request: FastifyRequest, max: number): { page: number; limit: number; keyword: string | undefined } {
  const q = (request.query ?? {}) as Record<string, unknown>;
  const num = (name: string, fallback: number, lo: number, hi: number): number => {
    const raw = q[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < lo || n > hi) throw invalidParam(`${name} must be an integer between ${lo} and ${hi}.`);
    return n;
  };
  const keyword = typeof q.keyword === 'string' && q.keyword !== '' ? q.keyword : undefined;
  return { page: num('page', 1, 1, PAGE_MAX), limit: num('limit', 20, 1, max), keyword };
}

/** The JSON object body of a request (requireJson already checked the content type). */
export function jsonBody(request: FastifyRequest): Record<string, unknown> {
  const b = request.body;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw invalidParam('The request body must be a JSON object.');
  return b as Record<string, unknown>;
}

/** A repeatable query parameter (`?tag_ids=a&tag_ids=b`) as a list of its non-empty values. */
export function queryList(request: FastifyRequest, name: string): string[] {
  const raw = ((request.query ?? {}) as Record<string, unknown>)[name];
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return list.filter((v): v is string => typeof v === 'string' && v !== '');
}
