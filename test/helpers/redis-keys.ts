import { Redis } from 'ioredis';

/** Deletes every Redis key under `prefix`. */
export async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  const r = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}
