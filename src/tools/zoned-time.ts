/** Wall-clock fields of an instant in an IANA time zone, and strftime over them (no I/O). */

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'] as const;

export interface ZonedFields {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly millisecond: number;
  /** 0 = Sunday. */
  readonly weekday: number;
  /** Offset from UTC in minutes (east positive). */
  readonly offsetMinutes: number;
  /** Short zone name as Python's `%Z` shows it for UTC (`UTC`), else the abbreviation or `GMT+9`. */
  readonly zoneName: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The formatter of a zone; undefined when the zone name is not a valid IANA zone. */
function formatter(zone: string): Intl.DateTimeFormat | undefined {
  let f = formatters.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
      });
    } catch {
      return undefined;
    }
    if (formatters.size > 500) formatters.clear();
    formatters.set(zone, f);
  }
  return f;
}

export function isTimeZone(zone: string): boolean {
  return zone !== '' && formatter(zone) !== undefined;
}

/** The wall-clock fields of `epochMs` in `zone`; throws RangeError for an unknown zone. */
export function zonedFields(epochMs: number, zone: string): ZonedFields {
  const f = formatter(zone);
  if (!f) throw new RangeError(`Invalid timezone: '${zone}'`);
  const parts: Record<string, string> = {};
  for (const p of f.formatToParts(new Date(epochMs))) parts[p.type] = p.value;
  const year = Number(parts.year), month = Number(parts.month), day = Number(parts.day);
  const hour = Number(parts.hour), minute = Number(parts.minute), second = Number(parts.second);
  const millisecond = ((epochMs % 1000) + 1000) % 1000;
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second, millisecond);
  const offsetMinutes = Math.round((asUtc - epochMs) / 60_000);
  const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
  const zoneName = zone === 'UTC' ? 'UTC' : (parts.timeZoneName ?? '');
  return { year, month, day, hour, minute, second, millisecond, weekday, offsetMinutes, zoneName };
}

/** Epoch ms of a wall-clock time in `zone` (the earlier instant when ambiguous, as Python's fold=0). */
export function zonedToEpoch(y: number, mo: number, d: number, h: number, mi: number, s: number, zone: string): number {
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  let guess = wall - zonedFields(wall, zone).offsetMinutes * 60_000;
  guess = wall - zonedFields(guess, zone).offsetMinutes * 60_000;
  return guess;
}

/** `YYYY-MM-DD HH:MM:SS` (Python's `%Y-%m-%d %H:%M:%S` for strptime); undefined when it does not parse or is no real date. */
export function parseLocalTime(text: string): [number, number, number, number, number, number] | undefined {
  const m = /^\s*(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})\s*$/.exec(text);
  if (!m) return undefined;
  const f = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const check = new Date(Date.UTC(f[0], f[1] - 1, f[2], f[3], f[4], f[5]));
  if (check.getUTCMonth() !== f[1] - 1 || check.getUTCDate() !== f[2] || f[3] > 23 || f[4] > 59 || f[5] > 59) return undefined;
  return f;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

function offset(mins: number): string {
  const sign = mins < 0 ? '-' : '+';
  const a = Math.abs(mins);
  return `${sign}${pad(Math.floor(a / 60))}${pad(a % 60)}`;
}

function dayOfYear(z: ZonedFields): number {
  return Math.round((Date.UTC(z.year, z.month - 1, z.day) - Date.UTC(z.year, 0, 1)) / 86_400_000) + 1;
}

/** Python's `strftime` for the C-standard directives; unknown directives stay as written (as glibc). Linear in the format. */
export function strftime(z: ZonedFields, format: string): string {
  return format.replace(/%(.)/gs, (all, c: string) => {
    switch (c) {
      case 'Y': return String(z.year);
      case 'y': return pad(z.year % 100);
      case 'm': return pad(z.month);
      case 'd': return pad(z.day);
      case 'e': return String(z.day).padStart(2, ' ');
      case 'H': return pad(z.hour);
      case 'I': return pad(z.hour % 12 === 0 ? 12 : z.hour % 12);
      case 'p': return z.hour < 12 ? 'AM' : 'PM';
      case 'M': return pad(z.minute);
      case 'S': return pad(z.second);
      case 'f': return pad(z.millisecond * 1000, 6);
      case 'a': return DAYS[z.weekday]!.slice(0, 3);
      case 'A': return DAYS[z.weekday]!;
      case 'w': return String(z.weekday);
      case 'u': return String(z.weekday === 0 ? 7 : z.weekday);
      case 'b': case 'h': return MONTHS[z.month - 1]!.slice(0, 3);
      case 'B': return MONTHS[z.month - 1]!;
      case 'j': return pad(dayOfYear(z), 3);
      case 'z': return offset(z.offsetMinutes);
      case 'Z': return z.zoneName;
      case 'F': return `${z.year}-${pad(z.month)}-${pad(z.day)}`;
      case 'T': return `${pad(z.hour)}:${pad(z.minute)}:${pad(z.second)}`;
      case 'D': return `${pad(z.month)}/${pad(z.day)}/${pad(z.year % 100)}`;
      case 'R': return `${pad(z.hour)}:${pad(z.minute)}`;
      case 'n': return '\n';
      case 't': return '\t';
      case '%': return '%';
      default: return all;
    }
  });
}

export { DAYS, MONTHS };
