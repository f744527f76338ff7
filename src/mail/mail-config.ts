import { boolSetting, type SettingGet } from '../infra/setting-values.js';
import { ConfigError } from '../config-error.js';

/**
 * Mail settings under Dify's names. Only `MAIL_TYPE=smtp` is implemented; without it (or without
 * `SMTP_SERVER` / `MAIL_DEFAULT_SEND_FROM`) mail is "not configured": start-up warns once and
 * every email delivery fails with `MAIL_NOT_CONFIGURED`, which names the settings.
 */
export interface MailConfig {
  /** `MAIL_TYPE`: `smtp`, or undefined (no mail). */
  readonly type: 'smtp' | undefined;
  /** `SMTP_SERVER`. */
  readonly server: string | undefined;
  /** `SMTP_PORT`, default 465 (Dify's default). */
  readonly port: number;
  /** `SMTP_USERNAME`; unset = no authentication. */
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** `SMTP_USE_TLS` (default false): TLS at all. */
  readonly useTls: boolean;
  /** `SMTP_OPPORTUNISTIC_TLS` (default false): with TLS on, start plain and upgrade with STARTTLS instead of implicit TLS. */
  readonly opportunisticTls: boolean;
  /** `MAIL_DEFAULT_SEND_FROM`, e.g. `Dovetail <no-reply@example.com>`. */
  readonly from: string | undefined;
}

export const MAIL_SETTINGS = 'MAIL_TYPE=smtp, SMTP_SERVER, SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD, SMTP_USE_TLS, SMTP_OPPORTUNISTIC_TLS and MAIL_DEFAULT_SEND_FROM';

/** The reason mail cannot be sent, naming the settings; undefined when it is configured. */
export function mailNotConfigured(c: MailConfig): string | undefined {
  const missing = [c.type !== 'smtp' ? 'MAIL_TYPE=smtp' : '', c.server ? '' : 'SMTP_SERVER', c.from ? '' : 'MAIL_DEFAULT_SEND_FROM'].filter(Boolean);
  if (missing.length === 0) return undefined;
  return `Mail is not configured (missing ${missing.join(', ')}); set ${MAIL_SETTINGS}`;
}

type Get = SettingGet;

/** Reads the mail settings; throws naming a malformed one. */
export function readMailConfig(get: Get): MailConfig {
  const type = get('MAIL_TYPE');
  if (type !== undefined && type !== 'smtp') throw new ConfigError(`MAIL_TYPE must be smtp (the only mail type Dovetail sends with), got "${type}"`);
  const rawPort = get('SMTP_PORT');
  if (rawPort !== undefined && !/^\d+$/.test(rawPort.trim())) throw new ConfigError(`SMTP_PORT must be an integer, got "${rawPort}"`);
  const port = rawPort === undefined ? 465 : Number(rawPort);
  if (port < 1 || port > 65535) throw new ConfigError(`SMTP_PORT must be between 1 and 65535, got ${port}`);
  return Object.freeze({
    type,
    server: get('SMTP_SERVER'),
    port,
    username: get('SMTP_USERNAME'),
    password: get('SMTP_PASSWORD'),
    useTls: boolSetting(get, 'SMTP_USE_TLS'),
    opportunisticTls: boolSetting(get, 'SMTP_OPPORTUNISTIC_TLS'),
    from: get('MAIL_DEFAULT_SEND_FROM'),
  });
}
