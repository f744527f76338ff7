import { ToolError, type Tool, type ToolProvider } from '../tool.js';
import { DAYS, MONTHS, isTimeZone, parseLocalTime, strftime, zonedFields, zonedToEpoch } from '../zoned-time.js';

const LOCAL_FORMAT = '%Y-%m-%d %H:%M:%S';

/** The server's own zone, for an empty `timezone` (Python's `astimezone()` with no argument). */
const serverZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

function zone(value: unknown, fallback: string): string {
  const z = typeof value === 'string' ? value : fallback;
  if (!isTimeZone(z)) throw new ToolError(`Invalid timezone: '${z}'`);
  return z;
}

const text = (t: string) => [{ type: 'text' as const, text: t }];

const currentTime: Tool = {
  name: 'current_time',
  description: 'A tool for getting the current time.',
  parameters: [
    { name: 'format', type: 'string', form: 'form', required: false, default: '%Y-%m-%d %H:%M:%S' },
    { name: 'timezone', type: 'select', form: 'form', required: false, default: 'UTC' },
  ],
  async invoke(p, ctx) {
    const tz = typeof p.timezone === 'string' && p.timezone !== '' ? p.timezone : 'UTC';
    const fm = typeof p.format === 'string' && p.format !== '' ? p.format : '%Y-%m-%d %H:%M:%S %Z';
    if (!isTimeZone(tz)) return text(`Invalid timezone: ${tz}`);
    return text(strftime(zonedFields(ctx.now(), tz), fm));
  },
};

const weekday: Tool = {
  name: 'weekday',
  description: 'A tool for calculating the weekday of a given date.',
  parameters: [
    { name: 'year', type: 'number', form: 'llm', required: false, llmDescription: 'Year' },
    { name: 'month', type: 'number', form: 'llm', required: true, llmDescription: 'Month' },
    { name: 'day', type: 'number', form: 'llm', required: true, llmDescription: 'Day' },
  ],
  async invoke(p) {
    const { year, month, day } = p as { year?: number; month?: number; day?: number };
    if (month === undefined || month === null) throw new ToolError('month is required', 'ToolParameterError');
    const ok = typeof year === 'number' && typeof day === 'number' && Number.isInteger(year) && Number.isInteger(month) && Number.isInteger(day) && year >= 1 && year <= 9999 && month >= 1 && month <= 12 && day >= 1 && day <= 31;
    const d = ok ? new Date(0) : undefined;
    if (d) d.setUTCFullYear(year!, month - 1, day); // years below 100 too (Date.UTC would map them to 19xx)
    if (!d || d.getUTCMonth() !== month - 1) return text(`Invalid date: Year ${String(year)}, Month ${String(month)}, Day ${String(day)}.`);
    return text(`${MONTHS[month - 1]} ${day}, ${year} is ${DAYS[d.getUTCDay()]}.`);
  },
};

const timezoneConversion: Tool = {
  name: 'timezone_conversion',
  description: 'A tool to convert a time (%Y-%m-%d %H:%M:%S) from one timezone to another.',
  parameters: [
    { name: 'current_time', type: 'string', form: 'llm', required: true, llmDescription: 'Datetime to convert, as %Y-%m-%d %H:%M:%S' },
    { name: 'current_timezone', type: 'string', form: 'llm', required: true, llmDescription: 'Timezone of the given time, e.g. Asia/Shanghai' },
    { name: 'target_timezone', type: 'string', form: 'llm', required: true, llmDescription: 'Timezone to convert to, e.g. Asia/Tokyo' },
  ],
  async invoke(p) {
    const from = zone(p.current_timezone, 'Asia/Shanghai');
    const to = zone(p.target_timezone, 'Asia/Tokyo');
    const f = parseLocalTime(String(p.current_time ?? ''));
    if (!f) throw new ToolError(`time data '${String(p.current_time ?? '')}' does not match format '${LOCAL_FORMAT}'`);
    return text(strftime(zonedFields(zonedToEpoch(...f, from), to), LOCAL_FORMAT));
  },
};

const localtimeToTimestamp: Tool = {
  name: 'localtime_to_timestamp',
  description: 'A tool to convert a local time (%Y-%m-%d %H:%M:%S) to a Unix timestamp.',
  parameters: [
    { name: 'localtime', type: 'string', form: 'llm', required: true, llmDescription: 'Local time as %Y-%m-%d %H:%M:%S' },
    { name: 'timezone', type: 'string', form: 'llm', required: false, llmDescription: 'Timezone, e.g. Asia/Shanghai' },
  ],
  async invoke(p) {
    const tz = p.timezone === undefined ? 'Asia/Shanghai' : p.timezone === '' || p.timezone === null ? serverZone() : zone(p.timezone, 'Asia/Shanghai');
    const f = parseLocalTime(String(p.localtime ?? ''));
    if (!f) throw new ToolError(`time data '${String(p.localtime ?? '')}' does not match format '${LOCAL_FORMAT}'`);
    return text(String(Math.floor(zonedToEpoch(...f, tz) / 1000)));
  },
};

const timestampToLocaltime: Tool = {
  name: 'timestamp_to_localtime',
  description: 'A tool to convert a Unix timestamp to local time (%Y-%m-%d %H:%M:%S).',
  parameters: [
    { name: 'timestamp', type: 'number', form: 'llm', required: true, llmDescription: 'Unix timestamp in seconds' },
    { name: 'timezone', type: 'string', form: 'llm', required: false, llmDescription: 'Timezone, e.g. Asia/Shanghai' },
  ],
  async invoke(p) {
    const tz = p.timezone === undefined ? 'Asia/Shanghai' : p.timezone === '' || p.timezone === null ? serverZone() : zone(p.timezone, 'Asia/Shanghai');
    const ts = typeof p.timestamp === 'number' ? p.timestamp : 0;
    const ms = ts * 1000;
    if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return text(`Invalid timestamp: ${String(p.timestamp)}`);
    return text(strftime(zonedFields(Math.floor(ms), tz), LOCAL_FORMAT));
  },
};

/** Dify's built-in `time` provider. */
export const timeProvider: ToolProvider = {
  name: 'time',
  tools: [currentTime, weekday, timezoneConversion, localtimeToTimestamp, timestampToLocaltime],
};
