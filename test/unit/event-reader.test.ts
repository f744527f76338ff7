import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Bus } from '../../src/infra/bus/bus.js';
import { MemoryBus } from '../../src/infra/bus/memory-bus.js';
import { readRunEvents, type LoggedEvent } from '../../src/runs/event-reader.js';
import { runChannel } from '../../src/runs/journal.js';
import type { StoredRunEvent } from '../../src/runs/run-event-store.js';

/**
 * The run event reader over an in-memory log and bus: replay after a cursor, tailing on the
 * doorbell, paging, polling when the bus cannot subscribe, and the end on abort. No server, no
 * database; the poll interval is waited out on fake timers.
 */

class MemoryLog {
  readonly rows: StoredRunEvent[] = [];
  reads = 0;
  add(runId: string, event: string): number {
    const seq = this.rows.filter((r) => r.runId === runId).length + 1;
    this.rows.push({ runId, seq, event, payload: JSON.stringify({ event, n: seq }), createdAt: 0 });
    return seq;
  }
  async after(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    this.reads++;
    return this.rows.filter((r) => r.runId === runId && r.seq > afterSeq).slice(0, limit);
  }
  async named(runId: string, events: readonly string[], opts: { afterSeq: number; limit: number }): Promise<StoredRunEvent[]> {
    this.reads++;
    return this.rows.filter((r) => r.runId === runId && r.seq > opts.afterSeq && events.includes(r.event)).slice(0, opts.limit);
  }
}

/** Takes `n` events from the reader. */
async function take(it: AsyncGenerator<LoggedEvent>, n: number): Promise<LoggedEvent[]> {
  const out: LoggedEvent[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('readRunEvents', () => {
  it('with `only`, reads and yields just the events of those names, waking on the doorbell for the next one', async () => {
    const log = new MemoryLog();
    const bus = new MemoryBus();
    for (const e of ['workflow_started', 'node_started', 'node_finished', 'workflow_paused']) log.add('r1', e);
    const ac = new AbortController();
    const reader = readRunEvents(log, bus, 'r1', 0, ac.signal, undefined, ['workflow_paused', 'workflow_finished']);
    expect((await take(reader, 1)).map((e) => [e.seq, e.payload.event])).toEqual([[4, 'workflow_paused']]);
    const next = reader.next();
    await new Promise((r) => setImmediate(r));
    log.add('r1', 'workflow_started');
    log.add('r1', 'workflow_finished');
    await bus.publish(runChannel('r1'), '6');
    const r = await next;
    expect(r.done ? undefined : [r.value.seq, r.value.payload.event]).toEqual([6, 'workflow_finished']);
    ac.abort();
    await reader.return(undefined);
  });

  it('replays the log after the cursor, in order, then yields an event appended later as soon as the doorbell rings', async () => {
    const log = new MemoryLog();
    const bus = new MemoryBus();
    for (const e of ['workflow_started', 'node_started', 'node_finished']) log.add('r1', e);
    log.add('other', 'workflow_started');
    const ac = new AbortController();
    const reader = readRunEvents(log, bus, 'r1', 1, ac.signal);
    const replay = await take(reader, 2);
    expect(replay.map((e) => [e.seq, e.payload.event])).toEqual([
      [2, 'node_started'],
      [3, 'node_finished'],
    ]);
    // the reader now waits; the next event arrives with its ring (the poll is a second away)
    const next = reader.next();
    await new Promise((r) => setImmediate(r));
    log.add('r1', 'workflow_finished');
    await bus.publish(runChannel('r1'), '4');
    const got = await Promise.race([next, new Promise((r) => setTimeout(() => r('timed out'), 500))]);
    expect(got).toEqual({ done: false, value: { seq: 4, payload: { event: 'workflow_finished', n: 4 } } });
    ac.abort();
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });

  it('reads a long log in pages of 500 without waiting between them, and unsubscribes at the end', async () => {
    const log = new MemoryLog();
    const bus = new MemoryBus();
    let subscribed = 0;
    const subscribe = bus.subscribe.bind(bus);
    bus.subscribe = async (channel, handler) => {
      subscribed++;
      const off = await subscribe(channel, handler);
      return async () => {
        subscribed--;
        await off();
      };
    };
    for (let i = 0; i < 1203; i++) log.add('r1', 'text_chunk');
    const ac = new AbortController();
    const reader = readRunEvents(log, bus, 'r1', 0, ac.signal);
    const all = await take(reader, 1203);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
    expect(log.reads).toBe(3);
    expect(subscribed).toBe(1);
    ac.abort();
    expect((await reader.next()).done).toBe(true);
    // the doorbell's subscription went with the reader
    expect(subscribed).toBe(0);
  });

  it('a bus that cannot subscribe is reported and the reader polls the log instead', async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    const broken: Bus = {
      shared: true,
      publish: async () => undefined,
      subscribe: async () => {
        throw new Error('redis unreachable');
      },
      close: async () => undefined,
    };
    const errors: string[] = [];
    log.add('r1', 'workflow_started');
    const ac = new AbortController();
    const reader = readRunEvents(log, broken, 'r1', 0, ac.signal, (err) => errors.push(err.message));
    expect((await reader.next()).value).toMatchObject({ seq: 1 });
    const next = reader.next();
    await vi.advanceTimersByTimeAsync(10);
    expect(errors).toEqual(['redis unreachable']);
    log.add('r1', 'workflow_finished');
    const readsBefore = log.reads;
    // no ring will come: the poll finds the event
    await vi.advanceTimersByTimeAsync(1000);
    expect(await next).toEqual({ done: false, value: { seq: 2, payload: { event: 'workflow_finished', n: 2 } } });
    expect(log.reads).toBe(readsBefore + 1);
    ac.abort();
    expect((await reader.next()).done).toBe(true);
  });

  it('an abort while waiting ends the reader at once', async () => {
    const log = new MemoryLog();
    const ac = new AbortController();
    const reader = readRunEvents(log, new MemoryBus(), 'r1', 0, ac.signal);
    const next = reader.next();
    await new Promise((r) => setImmediate(r));
    ac.abort();
    const got = await Promise.race([next, new Promise((r) => setTimeout(() => r('timed out'), 500))]);
    expect(got).toEqual({ done: true, value: undefined });
  });
});
