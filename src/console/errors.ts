import { defineError } from '../infra/errors.js';

/** Dify's console answer to a wrong password and to an unknown email alike (which of the two is not told). */
export const emailOrPasswordMismatch = defineError('email_or_password_mismatch', 400, () => 'The email or password is mismatched.');

export const consoleLoginRateLimited = defineError(
  'console_login_rate_limit_exceeded',
  429,
  (what: 'account' | 'address', max: number, windowSeconds: number) =>
    what === 'account'
      ? `Too many log-in attempts for this account: at most ${max} per ${windowSeconds} seconds (CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS, CONSOLE_LOGIN_RATE_LIMIT_WINDOW_SECONDS). Please try again later.`
      : `Too many log-in attempts from this address: at most ${max} per ${windowSeconds} seconds (CONSOLE_LOGIN_RATE_LIMIT_MAX_ATTEMPTS_PER_ADDRESS, CONSOLE_LOGIN_RATE_LIMIT_WINDOW_SECONDS). Please try again later.`,
  (_what: 'account' | 'address', _max: number, windowSeconds: number) => ({ 'retry-after': String(windowSeconds) }),
);

export const csrfTokenInvalid = defineError(
  'csrf_token_invalid',
  403,
  () => 'The X-CSRF-Token header is missing or does not match this session (GET /console/api/session gives the token).',
);
