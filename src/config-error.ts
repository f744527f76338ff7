/** Thrown at boot when a setting is malformed; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * A positive integer setting `key`: from the environment, else the settings file, else `fallback`;
 * anything else is a ConfigError naming it. Shared by the settings readers that live beside their
 * domain (tools, moderation).
 */
export function positiveIntSetting(env: Record<string, string | undefined>, file: Record<string, unknown>, key: string, fallback: number): number {
  const raw = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) throw new ConfigError(`${key} must be a positive integer, got "${raw}"`);
  return Number(raw);
}
