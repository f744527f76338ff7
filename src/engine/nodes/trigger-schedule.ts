import type { NodeHandler } from '../types.js';
import { isObject } from './shared.js';
import { systemOutputs } from './trigger-webhook.js';

/** Dify's `trigger-schedule` node (1.10): a run started by a tick of its schedule. */

export const SCHEDULE_FREQUENCIES = ['hourly', 'daily', 'weekly', 'monthly'] as const;
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/** The node's schedule as a five-field cron expression in its timezone. */
export interface ScheduleSpec {
  readonly cron: string;
  readonly timezone: string;
  readonly mode: 'cron' | 'visual';
}

/** Dify's `convert_12h_to_24h`: `"2:30 PM"` → [14, 30]. */
export function time12hTo24h(time: string): [number, number] {
  const m = /^\s*(\d{1,2}):(\d{2})\s*(AM|PM)\s*$/i.exec(time);
  if (!m) throw new Error(`visual_config.time must be a 12-hour time such as "2:30 PM", got ${JSON.stringify(time)}`);
  let hour = Number(m[1]);
  const minute = Number(m[2]);
  if (hour < 1 || hour > 12 || minute > 59) throw new Error(`visual_config.time must be a 12-hour time such as "2:30 PM", got ${JSON.stringify(time)}`);
  const pm = m[3]!.toUpperCase() === 'PM';
  if (hour === 12) hour = pm ? 12 : 0;
  else if (pm) hour += 12;
  return [hour, minute];
}

/** Dify's `ScheduleService.visual_to_cron`: hourly/daily/weekly/monthly settings as a cron expression. */
export function visualToCron(frequency: unknown, visual: Readonly<Record<string, unknown>>): string {
  const time = visual.time === undefined || visual.time === null ? '12:00 AM' : visual.time;
  const at = () => {
    if (typeof time !== 'string') throw new Error('visual_config.time must be a string such as "2:30 PM"');
    return time12hTo24h(time);
  };
  switch (frequency) {
    case 'hourly': {
      const minute = visual.on_minute === undefined || visual.on_minute === null ? 0 : visual.on_minute;
      if (typeof minute !== 'number' || !Number.isInteger(minute) || minute < 0 || minute > 59) throw new Error(`visual_config.on_minute must be a minute 0-59, got ${JSON.stringify(visual.on_minute)}`);
      return `${minute} * * * *`;
    }
    case 'daily': {
      const [h, m] = at();
      return `${m} ${h} * * *`;
    }
    case 'weekly': {
      const [h, m] = at();
      const days = visual.weekdays;
      if (!Array.isArray(days) || days.length === 0) throw new Error('visual_config.weekdays must list the days of a weekly schedule (sun … sat)');
      const nums = days.map((d) => {
        const i = (WEEKDAYS as readonly unknown[]).indexOf(d);
        if (i < 0) throw new Error(`visual_config.weekdays: ${JSON.stringify(d)} is not one of ${WEEKDAYS.join(', ')}`);
        return i;
      });
      return `${m} ${h} * * ${[...new Set(nums)].sort((a, b) => a - b).join(',')}`;
    }
    case 'monthly': {
      const [h, m] = at();
      const days = visual.monthly_days;
      if (!Array.isArray(days) || days.length === 0) throw new Error('visual_config.monthly_days must list the days of a monthly schedule (1-31 or "last")');
      let last = false;
      const nums = new Set<number>();
      for (const d of days) {
        if (d === 'last') last = true;
        else if (typeof d === 'number' && Number.isInteger(d) && d >= 1 && d <= 31) nums.add(d);
        else throw new Error(`visual_config.monthly_days: ${JSON.stringify(d)} is not a day 1-31 or "last"`);
      }
      const list = [...nums].sort((a, b) => a - b).map(String);
      if (last) list.push('L');
      return `${m} ${h} ${list.join(',')} * *`;
    }
    default:
      throw new Error(`frequency must be one of ${SCHEDULE_FREQUENCIES.join(', ')}, got ${JSON.stringify(frequency)}`);
  }
}

/**
 * The node's schedule (Dify's `ScheduleService.to_schedule_config`): `mode: cron` takes
 * `cron_expression` (five fields), `mode: visual` (the default) builds one from `frequency` and
 * `visual_config`; `timezone` defaults to UTC. The expression's values are checked by the
 * schedule library where schedules are computed (src/triggers/schedule.ts), not here.
 */
export function scheduleSpec(data: Readonly<Record<string, unknown>>): ScheduleSpec {
  const mode = data.mode === undefined || data.mode === null ? 'visual' : data.mode;
  const timezone = data.timezone === undefined || data.timezone === null || data.timezone === '' ? 'UTC' : data.timezone;
  if (typeof timezone !== 'string') throw new Error('timezone must be an IANA time zone name such as "Europe/Berlin"');
  if (mode === 'cron') {
    const cron = data.cron_expression;
    if (typeof cron !== 'string' || cron.trim() === '') throw new Error('cron_expression is required in mode cron');
    const fields = cron.trim().split(/\s+/);
    if (fields.length !== 5) throw new Error(`cron_expression must have five fields (minute hour day-of-month month day-of-week), got ${fields.length}: ${JSON.stringify(cron)}`);
    return { cron: fields.join(' '), timezone, mode };
  }
  if (mode !== 'visual') throw new Error(`mode must be cron or visual, got ${JSON.stringify(mode)}`);
  const visual = data.visual_config === undefined || data.visual_config === null ? {} : data.visual_config;
  if (!isObject(visual)) throw new Error('visual_config must be an object');
  return { cron: visualToCron(data.frequency, visual), timezone, mode };
}

export const triggerScheduleNode: NodeHandler = {
  validate(node) {
    scheduleSpec(node.data);
  },
  async run(ctx) {
    // as Dify's: the node's inputs (none for a tick) and the system variables are its outputs
    const inputs = ctx.pool.toJSON()[ctx.node.id] ?? {};
    return { type: 'succeeded', inputs: { ...inputs }, outputs: { ...inputs, ...systemOutputs(ctx) } };
  },
};
