import { Redis } from 'ioredis';
import type { Bus } from './bus.js';
import type { Logger } from '../logger.js';
import { logRedisErrors } from '../redis-errors.js';

/** Redis pub/sub bus for several instances: one publishing and one subscribing connection. */
export class RedisBus implements Bus {
  readonly shared = true;
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #prefix: string;
  readonly #handlers = new Map<string, Set<(message: string) => void>>();

  /** `prefix` namespaces channels (tests give each server its own); `logger` hears connection errors. */
  constructor(url: string, prefix = 'dovetail:', logger?: Logger) {
    this.#pub = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
    this.#sub = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
    logRedisErrors(this.#pub, logger, 'bus redis connection (publish)');
    logRedisErrors(this.#sub, logger, 'bus redis connection (subscribe)');
    this.#prefix = prefix;
    this.#sub.on('message', (channel: string, message: string) => {
      for (const h of [...(this.#handlers.get(channel) ?? [])]) {
        try {
          h(message);
        } catch {
          // ignore subscriber failures
        }
      }
    });
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.#pub.publish(this.#prefix + channel, message);
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const key = this.#prefix + channel;
    let set = this.#handlers.get(key);
    if (!set) {
      this.#handlers.set(key, (set = new Set()));
      await this.#sub.subscribe(key);
    }
    const h = (m: string) => handler(m);
    set.add(h);
    return async () => {
      set.delete(h);
      if (set.size === 0 && this.#handlers.get(key) === set) {
        this.#handlers.delete(key);
        await this.#sub.unsubscribe(key).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.#handlers.clear();
    this.#pub.disconnect();
    this.#sub.disconnect();
  }
}
