import type { Bus } from './bus.js';

/** In-process bus for the embedded mode: handlers run synchronously on publish. */
export class MemoryBus implements Bus {
  readonly shared = false;
  readonly #channels = new Map<string, Set<(message: string) => void>>();

  async publish(channel: string, message: string): Promise<void> {
    const handlers = this.#channels.get(channel);
    if (!handlers) return;
    for (const h of [...handlers]) {
      try {
        h(message);
      } catch {
        // a failing subscriber must not break the publisher
      }
    }
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    let set = this.#channels.get(channel);
    if (!set) this.#channels.set(channel, (set = new Set()));
    const h = (m: string) => handler(m);
    set.add(h);
    return async () => {
      set.delete(h);
      if (set.size === 0 && this.#channels.get(channel) === set) this.#channels.delete(channel);
    };
  }

  async close(): Promise<void> {
    this.#channels.clear();
  }
}
