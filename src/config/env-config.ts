import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { yamlLib } from '../infra/yaml.js';
import { ConfigError } from '../config-error.js';
import { DEFAULT_MODEL_HTTP_KEEPALIVE_SECONDS } from './defaults.js';
import type { ModelPrice } from '../lib/usage.js';
import type { MessageLeaseConfig } from '../messages/message-leases.js';
import { readProviderSettings, type ProvidersConfig } from '../llm/provider-settings.js';
import { readMailConfig, type MailConfig } from '../mail/mail-config.js';
import { readStorageConfig, type StorageConfig } from '../files/blobs/storage-config.js';

/** Reading settings: from the environment, else the settings file (`DOVETAIL_CONFIG` / ./dovetail.yaml). */

export type Env = Record<string, string | undefined>;

export const MB = 1024 * 1024;

export function int(env: Env, file: Record<string, unknown>, key: string, fallback: number, min = 0): number {
  const raw = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min) throw new ConfigError(`${key} must be at least ${min}, got ${n}`);
  return n;
}

/** A positive decimal number (`1`, `0.25`); throws ConfigError naming the key otherwise. */
export function positiveNumber(env: Env, file: Record<string, unknown>, key: string, fallback: number): number {
  const raw = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || Number(raw) <= 0) throw new ConfigError(`${key} must be a positive number, got "${raw}"`);
  return Number(raw);
}

/** `QUEUE`: bullmq or embedded; default bullmq when Redis is configured. */
export function queueRunner(raw: string | undefined, redisUrl: string | undefined): 'embedded' | 'bullmq' {
  const v = (raw ?? (redisUrl ? 'bullmq' : 'embedded')).trim();
  if (v !== 'embedded' && v !== 'bullmq') throw new ConfigError(`QUEUE must be bullmq or embedded, got "${v}"`);
  if (v === 'bullmq' && !redisUrl) throw new ConfigError('QUEUE=bullmq needs REDIS_URL (BullMQ runs on Redis); set REDIS_URL or QUEUE=embedded');
  return v;
}

/** Every `QUEUE_CONCURRENCY_<KIND>` setting (env or file), by key. */
export function concurrencyByKind(env: Env, file: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of new Set([...Object.keys(file), ...Object.keys(env)])) {
    if (key.startsWith('QUEUE_CONCURRENCY_') && str(env, file, key) !== undefined) out[key] = int(env, file, key, 1, 1);
  }
  return out;
}

export function codeMode(raw: string | undefined): 'sandbox' | 'process' {
  const v = (raw ?? 'sandbox').trim();
  if (v !== 'sandbox' && v !== 'process') throw new ConfigError(`CODE_EXECUTION_MODE must be sandbox or process, got "${v}"`);
  return v;
}

export function pathOrUndefined(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : path.resolve(v.trim());
}

/** `CODE_PYTHON_SNAPSHOT_DIR`: a folder, `off` (none), or unset for `<dataDir>/cache`. */
export function snapshotDir(v: string | undefined, dataDir: string): string | undefined {
  if (v?.trim().toLowerCase() === 'off') return undefined;
  return pathOrUndefined(v) ?? path.join(dataDir, 'cache');
}

export function str(env: Env, file: Record<string, unknown>, key: string): string | undefined {
  const v = env[key] ?? (file[key] === undefined ? undefined : String(file[key]));
  return v === '' ? undefined : v;
}

export function messageLeasesOf(env: Env, file: Record<string, unknown>): MessageLeaseConfig {
  const saveIntervalMs = int(env, file, 'MESSAGE_SAVE_INTERVAL_MS', 1000, 50);
  const leaseSeconds = int(env, file, 'MESSAGE_LEASE_SECONDS', 10, 1);
  if (saveIntervalMs >= leaseSeconds * 1000) {
    throw new ConfigError(`MESSAGE_SAVE_INTERVAL_MS (${saveIntervalMs}) must be shorter than MESSAGE_LEASE_SECONDS (${leaseSeconds} s): a live message would look orphaned`);
  }
  return { saveIntervalMs, leaseMs: leaseSeconds * 1000 };
}

export function list(raw: string | undefined, fallback: readonly string[]): readonly string[] {
  if (raw === undefined) return fallback;
  return raw.split(',').map((s) => s.trim().replace(/^\./, '').toLowerCase()).filter(Boolean);
}

/** `TRUST_PROXY`: true/false or a list of proxy addresses/CIDRs. */
export function trustProxy(raw: string | undefined): boolean | readonly string[] {
  const v = raw?.trim().toLowerCase();
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  return list(v, []);
}

/** A `provider/model` setting, checked at boot. */
export function modelRef(raw: string | undefined, key: string): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^[^/\s].*\/[^/\s]+$/.test(raw.trim())) throw new ConfigError(`${key} must be provider/model (e.g. openai/gpt-4o-mini), got "${raw}"`);
  return raw.trim();
}

/** The settings file `loadConfig` reads with this environment (`DOVETAIL_CONFIG`, else `./dovetail.yaml`), or undefined when there is none. */
export function configFile(env: Env = process.env): string | undefined {
  const file = env.DOVETAIL_CONFIG ?? 'dovetail.yaml';
  return existsSync(file) ? path.resolve(file) : undefined;
}

export function readFileConfig(env: Env): Record<string, unknown> {
  const file = env.DOVETAIL_CONFIG ?? 'dovetail.yaml';
  if (!existsSync(file)) {
    if (env.DOVETAIL_CONFIG) throw new ConfigError(`DOVETAIL_CONFIG: file not found: ${file}`);
    return {};
  }
  const parsed: unknown = yamlLib().parse(readFileSync(file, 'utf8'));
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`${file}: top level must be a mapping`);
  return parsed as Record<string, unknown>;
}

export function readPrices(file: Record<string, unknown>): Record<string, ModelPrice> {
  const raw = file.prices;
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null) throw new ConfigError('prices must be a mapping of model name to price');
  const out: Record<string, ModelPrice> = {};
  for (const [model, p] of Object.entries(raw as Record<string, Record<string, unknown>>)) {
    const dec = (k: string, d?: string): string => {
      const v = p?.[k] ?? d;
      if (v === undefined || !/^\d+(\.\d+)?$/.test(String(v))) throw new ConfigError(`prices.${model}.${k} must be a decimal string`);
      return String(v);
    };
    out[model] = { input: dec('input'), output: dec('output'), unit: dec('unit', '0.000001'), currency: String(p?.currency ?? 'USD') };
  }
  return out;
}

/** The model providers' settings; a malformed one is a ConfigError naming it. */
export function providersOf(env: Env, file: Record<string, unknown>): ProvidersConfig {
  try {
    return { ...readProviderSettings((key) => str(env, file, key), file.providers), keepAliveMs: int(env, file, 'MODEL_HTTP_KEEPALIVE_SECONDS', DEFAULT_MODEL_HTTP_KEEPALIVE_SECONDS, 1) * 1000 };
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

export function storageOf(env: Env, file: Record<string, unknown>): StorageConfig {
  try {
    return readStorageConfig((key) => str(env, file, key));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

export function mailOf(env: Env, file: Record<string, unknown>): MailConfig {
  try {
    return readMailConfig((key) => str(env, file, key));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}
