import { describe, expect, it } from 'vitest';
import { dayName, dayOf, localToInstant, offsetSegments, resolveRange } from '../../src/console/stats-range.js';

/** The console's statistics ranges: local dates in an IANA zone → instants, days and offset segments. */
describe('statistics ranges in a time zone', () => {
  it('a range of local dates covers their midnights in the zone', () => {
    const r = resolveRange({ start: '2026-03-10', end: '2026-03-12', timezone: 'Asia/Shanghai' }, 366);
    expect(new Date(r.startMs).toISOString()).toBe('2026-03-09T16:00:00.000Z');
    expect(new Date(r.endMs).toISOString()).toBe('2026-03-11T16:00:00.000Z');
    expect(r.days).toEqual(['2026-03-10', '2026-03-11']);
    expect(r.segments).toEqual([{ from: r.startMs, offsetMs: 8 * 3_600_000 }]);
  });

  it("Dify's `YYYY-MM-DD HH:MM` form is a partial day", () => {
    const r = resolveRange({ start: '2026-03-10 12:30', end: '2026-03-11 00:15', timezone: 'UTC' }, 366);
    expect(new Date(r.startMs).toISOString()).toBe('2026-03-10T12:30:00.000Z');
    expect(r.days).toEqual(['2026-03-10', '2026-03-11']);
  });

  it('across a DST change: two segments, each instant on its local day, the short day 23 hours', () => {
    const r = resolveRange({ start: '2026-03-07', end: '2026-03-10', timezone: 'America/New_York' }, 366);
    expect(r.segments).toHaveLength(2);
    expect(new Date(r.segments[1]!.from).toISOString()).toBe('2026-03-08T07:00:00.000Z');
    expect(r.segments.map((s) => s.offsetMs)).toEqual([-5 * 3_600_000, -4 * 3_600_000]);
    expect(dayName(dayOf(r.segments, Date.parse('2026-03-09T04:30:00Z')))).toBe('2026-03-09');
    expect(dayName(dayOf(r.segments, Date.parse('2026-03-08T04:30:00Z')))).toBe('2026-03-07');
    const midnight8 = localToInstant('America/New_York', Date.UTC(2026, 2, 8));
    const midnight9 = localToInstant('America/New_York', Date.UTC(2026, 2, 9));
    expect(midnight9 - midnight8).toBe(23 * 3_600_000);
    // autumn back: one change, the other way
    expect(offsetSegments('Europe/Berlin', Date.parse('2026-10-24T00:00:00Z'), Date.parse('2026-10-27T00:00:00Z')).map((s) => [new Date(s.from).toISOString(), s.offsetMs / 3_600_000])).toEqual([
      ['2026-10-24T00:00:00.000Z', 2],
      ['2026-10-25T01:00:00.000Z', 1],
    ]);
  });

  it('bad input is a 400 invalid_param naming the field or the limit', () => {
    const bad = (start: string, end: string, timezone: string, max = 366) => {
      try {
        resolveRange({ start, end, timezone }, max);
      } catch (err) {
        return { code: (err as { code: string }).code, status: (err as { status: number }).status, message: (err as Error).message };
      }
      throw new Error('accepted');
    };
    expect(bad('2026-03-10', '2026-03-12', 'Mars/Olympus')).toMatchObject({ code: 'invalid_param', status: 400, message: expect.stringContaining('timezone') });
    expect(bad('2026-02-30', '2026-03-12', 'UTC').message).toContain('start');
    expect(bad('2026-03-10', 'tomorrow', 'UTC').message).toContain('end');
    expect(bad('2026-03-10 24:00', '2026-03-12', 'UTC').message).toContain('start');
    expect(bad('2026-03-12', '2026-03-10', 'UTC').message).toBe('end must be later than start');
    expect(bad('2026-01-01', '2026-03-01', 'UTC', 30).message).toBe('the range covers 59 days; at most CONSOLE_STATS_MAX_DAYS (30) days');
  });
});
