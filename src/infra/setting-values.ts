import { ConfigError } from '../config-error.js';

/** Reads one setting by name (environment or dovetail.yaml), undefined when unset. */
export type SettingGet = (key: string) => string | undefined;

/** A true/false setting (true, 1, yes, on / false, 0, no, off; unset is false); throws naming a malformed one. */
export function boolSetting(get: SettingGet, key: string): boolean {
  const raw = get(key);
  if (raw === undefined) return false;
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`${key} must be true or false, got "${raw}"`);
}
