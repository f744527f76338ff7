/** Thrown at boot when a setting is malformed; the message names the setting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
