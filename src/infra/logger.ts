import pino from 'pino';

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

/** Structured JSON logs with keys and tokens redacted. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  });
}

/** Masks bearer keys and form tokens inside a URL or free text. */
export function redactText(text: string): string {
  return text
    .replace(/\b(app|dataset)-[A-Za-z0-9_-]{8,}/g, '$1-[redacted]')
    .replace(/(\/form\/human_input\/)[^/?\s]+/g, '$1[redacted]');
}
