/** The console's settings (src/config.ts reads them; README's configuration table lists them). */
export interface ConsoleSettings {
  /** `CONSOLE_SESSION_HOURS`: how long a log-in lasts, hours (default 24; a fraction allowed, e.g. 0.5). */
  readonly sessionHours: number;
  /** `CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS`: log-in attempts per account (email) per window (default 10). */
  readonly loginMaxAttemptsPerAccount: number;
  /** `CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS`: log-in attempts per client address per window (default 30). */
  readonly loginMaxAttemptsPerAddress: number;
  /** `CONSOLE_LOGIN_RATE_LIMIT_WINDOW_SECONDS`: the window of both limits, seconds (default 900). */
  readonly loginWindowSeconds: number;
  /** `CONSOLE_PASSWORD_MIN_LENGTH` (default 8) and `CONSOLE_PASSWORD_MAX_LENGTH` (default 1024): password lengths, characters. */
  readonly passwordMinLength: number;
  readonly passwordMaxLength: number;
}
