import type pino from 'pino';

/** pino's level numbers, as a person reads them. */
const LABELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** ANSI colours of the levels (only on a terminal that has colours). */
const COLOURS: Readonly<Record<number, string>> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };

/**
 * One JSON log line as a person reads it: `12:03:04.567 INFO  message  key=value …`, the error's
 * stack on the lines below. What pino wrote (redactions included) is all it shows; pid and
 * hostname are left out. A line that is not JSON passes as it is.
 */
export function terminalLine(json: string, colours = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const { level, time, msg, pid: _pid, hostname: _host, err, ...rest } = o;
  const n = typeof level === 'number' ? level : 30;
  const label = (LABELS[n] ?? String(level)).padEnd(5);
  const clock = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' && v !== '' && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ');
  const paint = (code: string, s: string) => (colours ? `\x1b[${code}m${s}\x1b[0m` : s);
  let line = `${paint('90', clock)} ${paint(COLOURS[n] ?? '0', label)} ${typeof msg === 'string' ? msg : ''}${fields ? `  ${paint('90', fields)}` : ''}`;
  if (err && typeof err === 'object') {
    const e = err as { stack?: unknown; message?: unknown };
    line += `\n${typeof e.stack === 'string' ? e.stack : JSON.stringify(err)}`;
  }
  return `${line}\n`;
}

/** A pino destination that writes each line readable to a terminal (`out`), in colour when it has colours. */
export function terminalDestination(out: NodeJS.WritableStream & { hasColors?: () => boolean }): pino.DestinationStream {
  const colours = typeof out.hasColors === 'function' && out.hasColors();
  return {
    write(line: string) {
      out.write(terminalLine(line.trimEnd(), colours));
    },
  };
}
