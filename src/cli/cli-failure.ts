import { ConfigError } from '../config-error.js';
import { DslError } from '../apps/errors.js';
import { ServiceError } from '../infra/errors.js';
import { CliError } from './cli-error.js';

// Loaded only when a command fails (src/cli.ts).

/** A failure the CLI reports as its message alone (anything else is a bug: its stack is printed). */
export function knownError(err: unknown): err is Error {
  return err instanceof CliError || err instanceof DslError || err instanceof ConfigError || err instanceof ServiceError;
}

/** The `code` of a failure's JSON document (`--json`): the service's error code, else the kind of failure. */
function codeOf(err: unknown): string {
  if (err instanceof ServiceError) return err.code;
  if (err instanceof DslError) return 'invalid_dsl';
  if (err instanceof ConfigError) return 'invalid_setting';
  if (err instanceof CliError) return 'invalid_param';
  return 'internal_error';
}

/**
 * The failure as one JSON document for stdout when the command was given `--json` (the line on
 * stderr stays): `{"code","message","exit_code"}` — Dify's envelope, with the process's exit code
 * where an HTTP answer has its status. `usage` marks a command line commander refused.
 */
export function failureJson(err: unknown, exitCode: number, usage?: { code: string; message: string }): string {
  const doc = usage
    ? { code: 'invalid_usage', message: usage.message.replace(/^error: /, '').trim(), exit_code: exitCode }
    : { code: codeOf(err), message: knownError(err) ? err.message : String((err as Error)?.message ?? err), exit_code: exitCode };
  return `${JSON.stringify(doc)}\n`;
}
