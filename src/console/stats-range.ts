import { invalidParam } from '../infra/errors.js';

/** One day in milliseconds. */
export const DAY_MS = 86_400_000;

/**
 * A stretch of time over which a time zone's offset from UTC does not change: from `from` (epoch
 * ms, inclusive) to the next segment's `from`.
 */
export interface OffsetSegment {
  readonly from: number;
  /** Local wall clock minus UTC, ms (UTC+08:00 is 28,800,000). */
  readonly offsetMs: number;
}

/**
 * A range of whole or partial local days in a time zone: the instants [startMs, endMs), the local
 * dates they touch (`YYYY-MM-DD`, in order) and the zone's offsets over them. The day of an instant
 * `t` in segment `s` is `floor((t + s.offsetMs) / DAY_MS)` days after 1970-01-01: plain integer
 * arithmetic, the same on SQLite and PostgreSQL (see docs/decisions.md, "Console statistics: days
 * in a time zone").
 */
export interface StatsRange {
  readonly timezone: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly days: readonly string[];
  readonly segments: readonly OffsetSegment[];
}

/** What a range request gives: local dates or Dify's local `YYYY-MM-DD HH:MM`, and an IANA zone. */
export interface RangeInput {
  /** Inclusive: `YYYY-MM-DD` (its midnight) or `YYYY-MM-DD HH:MM`, local time in `timezone`. */
  readonly start: string;
  /** Exclusive: `YYYY-MM-DD` (its midnight) or `YYYY-MM-DD HH:MM`, local time in `timezone`. */
  readonly end: string;
  /** An IANA time zone name (`Asia/Shanghai`, `UTC`). */
  readonly timezone: string;
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}))?$/;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The formatter of a zone's wall clock, or undefined when the zone is unknown. */
function formatterOf(timezone: string): Intl.DateTimeFormat | undefined {
  let f = formatters.get(timezone);
  if (f) return f;
  try {
    f = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  } catch {
    return undefined;
  }
  // the cache holds only zones Intl knows (a bounded set)
  formatters.set(timezone, f);
  return f;
}

/** Whether Intl knows the IANA zone name. */
export function isTimezone(timezone: string): boolean {
  return timezone.length > 0 && timezone.length <= 64 && formatterOf(timezone) !== undefined;
}

/** The zone's offset (local minus UTC, ms) at instant `t`. */
export function offsetAt(timezone: string, t: number): number {
  const parts = formatterOf(timezone)!.formatToParts(new Date(t));
  const n = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const wall = Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second'));
  return wall - (t - (((t % 1000) + 1000) % 1000));
}

/**
 * The instant a local wall-clock time (given as if it were UTC ms) names in the zone. A time in a
 * spring-forward gap takes the offset before the gap; a repeated autumn hour, the first of the two.
 */
export function localToInstant(timezone: string, wallMs: number): number {
  const first = wallMs - offsetAt(timezone, wallMs);
  const second = wallMs - offsetAt(timezone, first);
  return Math.min(first, second);
}

/** `YYYY-MM-DD` of a day number (days after 1970-01-01). */
export function dayName(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** The offset changes over [startMs, endMs): checked once a day, each change found to the second. */
export function offsetSegments(timezone: string, startMs: number, endMs: number): OffsetSegment[] {
  const segments: OffsetSegment[] = [{ from: startMs, offsetMs: offsetAt(timezone, startMs) }];
  for (let t = startMs; t < endMs; ) {
    const next = Math.min(t + DAY_MS, endMs);
    const current = segments.at(-1)!.offsetMs;
    const later = offsetAt(timezone, next);
    if (later !== current) {
      // the change lies in (t, next]: bisect to the first second with the new offset
      let lo = t;
      let hi = next;
      while (hi - lo > 1000) {
        const mid = lo + Math.max(1000, Math.floor((hi - lo) / 2000) * 1000);
        if (offsetAt(timezone, mid) === current) lo = mid;
        else hi = mid;
      }
      if (hi < endMs) segments.push({ from: hi, offsetMs: offsetAt(timezone, hi) });
    }
    t = next;
  }
  return segments;
}

/** The day number of instant `t` under the segments (the JS twin of the SQL day expression). */
export function dayOf(segments: readonly OffsetSegment[], t: number): number {
  let offset = segments[0]!.offsetMs;
  for (const s of segments) if (t >= s.from) offset = s.offsetMs;
  return Math.floor((t + offset) / DAY_MS);
}

function parseLocal(field: 'start' | 'end', value: string): number {
  const m = LOCAL.exec(value);
  const wall = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0)) : NaN;
  // Date.UTC rolls 2026-02-30 over to March: a date that does not round-trip is not a date
  if (!m || Number.isNaN(wall) || new Date(wall).toISOString().slice(0, 10) !== `${m[1]}-${m[2]}-${m[3]}` || Number(m[4] ?? 0) > 23 || Number(m[5] ?? 0) > 59) {
    throw invalidParam(`${field} must be a local date YYYY-MM-DD or YYYY-MM-DD HH:MM, got ${JSON.stringify(value.slice(0, 40))}`);
  }
  return wall;
}

/**
 * Checks a range request and resolves it in its zone: start before end, at most `maxDays` local
 * days (`CONSOLE_STATS_MAX_DAYS`). Bad input is a 400 `invalid_param` naming the field.
 */
export function resolveRange(input: RangeInput, maxDays: number): StatsRange {
  if (!isTimezone(input.timezone)) throw invalidParam(`timezone must be an IANA time zone name such as Asia/Shanghai or UTC, got ${JSON.stringify(input.timezone.slice(0, 64))}`);
  const startMs = localToInstant(input.timezone, parseLocal('start', input.start));
  const endMs = localToInstant(input.timezone, parseLocal('end', input.end));
  if (endMs <= startMs) throw invalidParam('end must be later than start');
  const segments = offsetSegments(input.timezone, startMs, endMs);
  const first = dayOf(segments, startMs);
  const last = dayOf(segments, endMs - 1);
  if (last - first + 1 > maxDays) throw invalidParam(`the range covers ${last - first + 1} days; at most CONSOLE_STATS_MAX_DAYS (${maxDays}) days`);
  const days: string[] = [];
  for (let d = first; d <= last; d++) days.push(dayName(d));
  return { timezone: input.timezone, startMs, endMs, days, segments };
}
