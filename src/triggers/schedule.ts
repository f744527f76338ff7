import { createRequire } from 'node:module';
import { scheduleSpec, type ScheduleSpec } from '../engine/nodes/trigger-schedule.js';

/**
 * Schedule computation with cron-parser (the library BullMQ uses for its own repeatable jobs;
 * docs/decisions.md says why): the next ticks of a five-field cron expression in an IANA time zone.
 *
 * Daylight-saving changes, as the library computes them (unit tests hold them): a wall-clock time
 * that does not exist on the day clocks go forward (02:30 in Europe/Berlin on the last Sunday of
 * March) fires once at the first instant after the gap (03:30 local); a time that happens twice
 * when clocks go back fires once, at its first occurrence.
 */

const require = createRequire(import.meta.url);
let parser: typeof import('cron-parser').CronExpressionParser | undefined;

/**
 * cron-parser (with Luxon), loaded with the first schedule computed rather than at start
 * (docs/speed.md, "Start-up"); the computations are synchronous, so it is `require`d.
 */
function cronParser(): typeof import('cron-parser').CronExpressionParser {
  parser ??= (require('cron-parser') as typeof import('cron-parser')).CronExpressionParser;
  return parser;
}

/** Why a schedule cannot be computed; the message names the field. */
export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

function checkZone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ScheduleError(`timezone ${JSON.stringify(timezone)} is not an IANA time zone name (such as "Europe/Berlin" or "UTC")`);
  }
}

/** The next `count` ticks after `from` (epoch ms, exclusive), as epoch ms. */
export function nextTicks(cron: string, timezone: string, from: number, count = 1): number[] {
  checkZone(timezone);
  let it;
  try {
    it = cronParser().parse(cron, { tz: timezone, currentDate: new Date(from) });
  } catch (err) {
    throw new ScheduleError(`cron_expression ${JSON.stringify(cron)} is not valid: ${(err as Error).message}`);
  }
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    try {
      out.push(it.next().getTime());
    } catch {
      break; // an expression with no further date (e.g. 31 February)
    }
  }
  return out;
}

/** The next tick after `from`, or null when the expression has none. */
export function nextTick(cron: string, timezone: string, from: number): number | null {
  return nextTicks(cron, timezone, from, 1)[0] ?? null;
}

/** A schedule node's spec, checked end to end (the node's fields, the expression's values, the zone); throws ScheduleError. */
export function checkedSchedule(data: Readonly<Record<string, unknown>>): ScheduleSpec {
  let spec: ScheduleSpec;
  try {
    spec = scheduleSpec(data);
  } catch (err) {
    throw new ScheduleError((err as Error).message);
  }
  if (nextTicks(spec.cron, spec.timezone, 0, 1).length === 0) throw new ScheduleError(`cron_expression ${JSON.stringify(spec.cron)} never fires`);
  return spec;
}
