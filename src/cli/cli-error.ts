/** A CLI failure: printed as one line on stderr, exit code 1. */
export class CliError extends Error {
  override name = 'CliError';
}
