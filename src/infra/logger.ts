import pino from 'pino';
import { terminalDestination } from './terminal-log.js';

export type Logger = pino.Logger;

/** Paths whose values never reach the log. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'api_key',
  'apiKey',
  'token',
  'form_token',
  'req.params.form_token',
];

/**
 * Structured logs with keys and tokens redacted, to stdout or `destination`: JSON lines, or lines
 * for people (terminal-log.ts) when that is a terminal (`isTTY`) — the same records either way.
 */
export function createLogger(level: string, destination?: pino.DestinationStream | (NodeJS.WritableStream & { isTTY?: boolean })): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  const out = destination ?? process.stdout;
  if ((out as { isTTY?: boolean }).isTTY === true) return pino(options, terminalDestination(out as NodeJS.WritableStream));
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}

/** Masks bearer keys and form tokens (API paths and the form page `/form/{token}`) inside a URL or free text. */
export function redactText(text: string): string {
  return text
    .replace(/\b(app|dataset)-[A-Za-z0-9_-]{8,}/g, '$1-[redacted]')
    .replace(/(\/form\/human_input\/)[^/?\s]+/g, '$1[redacted]')
    .replace(/^(\/form\/)(?!-\/)[^/?\s]+/, '$1[redacted]');
}

/** Query parameter names whose values are secrets (`api_key`, `access_token`, `sign`, `password`, …). */
const SECRET_PARAM = /key|token|secret|passw|pwd|auth|sign|credential|session|cookie/i;

/**
 * A request URL fit for the log: the value of every query parameter whose name looks like a
 * secret is masked, and so is any `app-…` / `dataset-…` key and form token anywhere in it.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    let name = pair.slice(0, eq);
    try {
      name = decodeURIComponent(name.replaceAll('+', ' '));
    } catch {
      // a malformed escape: judge the raw name
    }
    return SECRET_PARAM.test(name) ? `${pair.slice(0, eq)}=[redacted]` : pair;
  }).join('&');
  const joined = q < 0 ? path : `${path}?${query}`;
  // Keys may also arrive percent-encoded or in a path segment.
  return redactText(joined).replace(/\b(app|dataset)(-|%2d)[A-Za-z0-9_%-]{8,}/gi, '$1-[redacted]');
}
