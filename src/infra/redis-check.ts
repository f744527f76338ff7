import { Redis } from 'ioredis';
import { ConfigError } from '../config-error.js';
import { withoutPassword } from '../lib/url-password.js';

/**
 * Start-up check of `REDIS_URL`: one connection, no reconnection, one PING answered within
 * `timeoutSeconds`. A closed port, a host that does not resolve and a port that accepts and never
 * answers all end in a ConfigError naming REDIS_URL (the clients the process keeps would instead
 * reconnect for ever, and a process that cannot reach Redis would hang instead of exiting).
 */
export async function checkRedis(url: string, timeoutSeconds: number): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutSeconds * 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableReadyCheck: false,
  });
  let lastError: Error | undefined;
  client.on('error', (err: Error) => (lastError = err));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to PING within REDIS_CONNECT_TIMEOUT_SECONDS=${timeoutSeconds} s`)), timeoutSeconds * 1000);
  });
  try {
    await Promise.race([client.connect().then(() => client.ping()), timeout]);
  } catch (err) {
    const cause = lastError && lastError !== err ? `${(err as Error).message} (${lastError.message})` : (err as Error).message;
    throw new ConfigError(`REDIS_URL (${withoutPassword(url)}) cannot be used: ${cause}`);
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}
