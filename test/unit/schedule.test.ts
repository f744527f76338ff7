import { describe, expect, it } from 'vitest';
import { checkedSchedule, nextTicks, ScheduleError } from '../../src/triggers/schedule.js';
import { scheduleSpec, time12hTo24h, visualToCron } from '../../src/engine/nodes/trigger-schedule.js';

/** Next-fire computation of schedule triggers (cron-parser), daylight-saving changes included. */

const iso = (ms: number[]) => ms.map((t) => new Date(t).toISOString());
const at = (s: string) => Date.parse(s);

describe('next fire times across daylight-saving changes', () => {
  it('Europe/Berlin, clocks forward (29 March 2026, 02:00 → 03:00): 02:30 does not exist and fires once at 03:30 CEST', () => {
    expect(iso(nextTicks('30 2 * * *', 'Europe/Berlin', at('2026-03-28T00:00:00Z'), 3))).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST, the first instant after the gap
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('Europe/Berlin, clocks back (25 October 2026, 03:00 → 02:00): 02:30 happens twice and fires once', () => {
    expect(iso(nextTicks('30 2 * * *', 'Europe/Berlin', at('2026-10-24T00:00:00Z'), 3))).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST); not again at 01:30Z (CET)
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('an hourly schedule keeps real hours through the gap (no tick is doubled or lost beyond the missing hour)', () => {
    expect(iso(nextTicks('0 * * * *', 'Europe/Berlin', at('2026-03-29T00:00:00Z'), 3))).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-29T02:00:00.000Z', '2026-03-29T03:00:00.000Z']);
  });

  it('America/New_York, clocks back (1 November 2026): a daily 01:30 fires once, then at EST', () => {
    expect(iso(nextTicks('30 1 * * *', 'America/New_York', at('2026-10-31T12:00:00Z'), 2))).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });

  it('a zone without daylight saving (Asia/Tokyo) and the last day of the month ("L")', () => {
    expect(iso(nextTicks('0 9 1,15,L * *', 'Asia/Tokyo', at('2026-02-01T00:00:00Z'), 3))).toEqual(['2026-02-15T00:00:00.000Z', '2026-02-28T00:00:00.000Z', '2026-03-01T00:00:00.000Z']);
  });
});

describe("the node's schedule (Dify's visual_to_cron and cron mode)", () => {
  it('builds cron expressions from visual settings as Dify does', () => {
    expect(time12hTo24h('12:00 AM')).toEqual([0, 0]);
    expect(time12hTo24h('12:15 PM')).toEqual([12, 15]);
    expect(time12hTo24h('2:30 PM')).toEqual([14, 30]);
    expect(visualToCron('hourly', { on_minute: 15 })).toBe('15 * * * *');
    expect(visualToCron('daily', { time: '9:05 AM' })).toBe('5 9 * * *');
    expect(visualToCron('weekly', { time: '6:00 PM', weekdays: ['fri', 'mon'] })).toBe('0 18 * * 1,5');
    expect(visualToCron('monthly', { time: '12:00 AM', monthly_days: [15, 1, 'last'] })).toBe('0 0 1,15,L * *');
    expect(scheduleSpec({ mode: 'visual', frequency: 'daily', visual_config: { time: '7:00 AM' }, timezone: 'Europe/Berlin' })).toEqual({ cron: '0 7 * * *', timezone: 'Europe/Berlin', mode: 'visual' });
  });

  it('refuses what cannot fire, naming the field', () => {
    const bad = (data: Record<string, unknown>) => {
      try {
        checkedSchedule(data);
      } catch (err) {
        expect(err).toBeInstanceOf(ScheduleError);
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(bad({ mode: 'cron', cron_expression: '* * * *' })).toBe('cron_expression must have five fields (minute hour day-of-month month day-of-week), got 4: "* * * *"');
    expect(bad({ mode: 'cron', cron_expression: '0 0 * * * *' })).toMatch(/five fields .* got 6/);
    expect(bad({ mode: 'cron', cron_expression: '61 * * * *' })).toMatch(/^cron_expression "61 \* \* \* \*" is not valid/);
    expect(bad({ mode: 'cron', cron_expression: '0 0 * * *', timezone: 'Mars/Olympus' })).toMatch(/^timezone "Mars\/Olympus" is not an IANA time zone/);
    expect(bad({ mode: 'visual', frequency: 'yearly' })).toMatch(/^frequency must be one of hourly, daily, weekly, monthly/);
    expect(bad({ mode: 'visual', frequency: 'weekly', visual_config: { time: '25:00 PM', weekdays: ['mon'] } })).toMatch(/visual_config\.time/);
    expect(bad({ mode: 'cron', cron_expression: '*/5 * * * *', timezone: 'UTC' })).toBe('accepted');
  });
});
