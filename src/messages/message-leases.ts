import type { MessageStore } from './message-store.js';
import type { ActiveRequestLimiter } from '../infra/active-requests.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { Queue } from '../infra/queue/queue.js';

/** The repeatable job that ends messages whose process died. */
export const MESSAGE_SWEEP_JOB = 'messages.sweep';

export interface MessageLeaseConfig {
  /** The answer so far and a heartbeat are written this often while generating (`MESSAGE_SAVE_INTERVAL_MS`, default 1000). */
  readonly saveIntervalMs: number;
  /** A `running` message without a heartbeat for this long lost its process (`MESSAGE_LEASE_SECONDS`, default 10). */
  readonly leaseMs: number;
}

/** A generation of this process: its answer so far, read by the saver. */
export interface LiveMessage {
  answer: string;
  /** Stops saving it (the generation is about to store its final answer). */
  end(): void;
}

/** The modes whose messages a generation of this service writes (chatflow messages belong to their run). */
const MODES = ['completion', 'chat', 'agent-chat'];

/**
 * Keeps chat and completion messages alive while this process generates them, and ends those a
 * dead process left `running`:
 * - every `saveIntervalMs` each live message gets `heartbeat_at = now` and, when it grew, its
 *   answer so far (so a crash loses at most one interval of text);
 * - `sweep` (a repeatable job every half lease, run by one worker per tick) ends a `running` message
 *   whose heartbeat is older than the lease as `error`, keeping its partial answer, and frees the
 *   concurrency slot it held (which a shared limiter would otherwise keep until it went stale).
 */
export class MessageLeases {
  readonly #messages: MessageStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #cfg: MessageLeaseConfig;
  readonly #slots: ActiveRequestLimiter;
  readonly #live = new Map<string, { msg: LiveMessage; saved: string }>();
  #saver: NodeJS.Timeout | undefined;
  #saving = false;

  /** Told the seconds from an ended message's last heartbeat to its end (a metric). */
  readonly #observe: ((seconds: number) => void) | undefined;
  constructor(deps: { messages: MessageStore; clock: Clock; logger: Logger; config: MessageLeaseConfig; activeRequests: ActiveRequestLimiter; observeCleanUp?: (seconds: number) => void }) {
    this.#observe = deps.observeCleanUp;
    this.#messages = deps.messages;
    this.#clock = deps.clock;
    this.#log = deps.logger;
    this.#cfg = deps.config;
    this.#slots = deps.activeRequests;
  }

  /** Starts saving `messageId` (its row may be written a moment later: saves only touch `running` rows). */
  track(messageId: string): LiveMessage {
    const entry = { msg: undefined as unknown as LiveMessage, saved: '' };
    entry.msg = {
      answer: '',
      end: () => {
        if (this.#live.get(messageId) === entry) this.#live.delete(messageId);
        if (this.#live.size === 0) this.#stopSaver();
      },
    };
    this.#live.set(messageId, entry);
    if (!this.#saver) {
      this.#saver = setInterval(() => void this.save(), this.#cfg.saveIntervalMs);
      this.#saver.unref();
    }
    return entry.msg;
  }

  #stopSaver(): void {
    if (this.#saver) clearInterval(this.#saver);
    this.#saver = undefined;
  }

  /** Writes a heartbeat for every live message, and the answer of those whose answer grew. */
  async save(): Promise<void> {
    if (this.#saving || this.#live.size === 0) return;
    this.#saving = true;
    const now = this.#clock.now();
    try {
      const unchanged: string[] = [];
      const grown: { id: string; answer: string; entry: { saved: string } }[] = [];
      for (const [id, entry] of this.#live) {
        const answer = entry.msg.answer;
        if (answer === entry.saved) unchanged.push(id);
        else grown.push({ id, answer, entry });
      }
      await this.#messages.saveLive(grown, unchanged, now);
      for (const g of grown) g.entry.saved = g.answer;
    } catch (err) {
      this.#log.warn({ err }, 'messages in progress could not be saved');
    } finally {
      this.#saving = false;
    }
  }

  /**
   * Declares the sweep as a repeatable job every half lease: one worker of the deployment sweeps
   * per tick (api-only processes and one-shot commands run no job worker, so never sweep).
   */
  async scheduleSweep(queue: Queue): Promise<void> {
    queue.register(MESSAGE_SWEEP_JOB, { run: async () => void (await this.sweep()) });
    await queue.repeat(MESSAGE_SWEEP_JOB, Math.max(200, Math.floor(this.#cfg.leaseMs / 2)));
  }

  /** Ends the messages whose process stopped saving them; returns how many. */
  async sweep(): Promise<number> {
    const now = this.#clock.now();
    const cutoff = now - this.#cfg.leaseMs;
    const rows = await this.#messages.silentSince(cutoff, MODES, 500);
    let ended = 0;
    const seconds = this.#cfg.leaseMs / 1000;
    for (const r of rows) {
      if (this.#live.has(r.id)) continue; // ours and alive (a save is late): never end it here
      const error = `The server generating this answer stopped before it finished (no sign of life for MESSAGE_LEASE_SECONDS=${seconds} s); the answer so far is kept.`;
      if (!(await this.#messages.endSilent(r.id, cutoff, error, now))) continue;
      ended++;
      this.#observe?.((now - r.heartbeatAt) / 1000);
      await this.#slots.releaseOrphan(r.appId, r.id).catch((err: unknown) => this.#log.warn({ err, messageId: r.id }, 'slot of an orphaned message not freed (it expires)'));
    }
    if (ended > 0) this.#log.warn({ ended }, 'ended messages whose generating process stopped');
    return ended;
  }

  close(): void {
    this.#stopSaver();
  }
}
