import { describe, expect, it } from 'vitest';
import { FencedOut, RunJournal } from '../../src/runs/journal.js';
import { runChannel } from '../../src/runs/journal.js';
import type { JournalWrite } from '../../src/runs/run-event-store.js';
import type { Bus } from '../../src/infra/bus/bus.js';
import { SecretMask } from '../../src/runs/secret-mask.js';

/** The journal's store, in memory: records each flush; `answer` decides what the next flush does. */
class FakeEventStore {
  readonly writes: JournalWrite[] = [];
  /** Snapshots as serialized inside each flush (the store calls `snapshot()` in its transaction). */
  readonly snapshots: (string | undefined)[] = [];
  /** What flushes answer, in turn (the last one repeats): true written, false fenced out, an Error thrown. */
  answers: (boolean | Error)[] = [true];
  /** Resolved when a flush may finish: lets a test hold a flush in flight. */
  gate: Promise<void> = Promise.resolve();
  readonly log: string[];

  constructor(log: string[]) {
    this.log = log;
  }

  async flush(w: JournalWrite): Promise<boolean> {
    const n = this.writes.length;
    this.writes.push(w);
    this.log.push(`flush ${n} start`);
    await this.gate;
    const answer = this.answers[Math.min(n, this.answers.length - 1)]!;
    this.log.push(`flush ${n} end`);
    if (answer instanceof Error) throw answer;
    this.snapshots.push(w.snapshot?.());
    return answer;
  }
}

class FakeBus implements Bus {
  readonly shared = false;
  readonly published: [string, string][] = [];
  readonly log: string[];
  constructor(log: string[]) {
    this.log = log;
  }
  async publish(channel: string, message: string): Promise<void> {
    this.log.push(`publish ${message}`);
    this.published.push([channel, message]);
  }
  async subscribe(): Promise<() => Promise<void>> {
    return async () => undefined;
  }
  async close(): Promise<void> {}
}

const clock = { now: () => 1_700_000_000_000 };
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function journal(opts: { lastSeq?: number; epoch?: number; mask?: SecretMask; holdLimitMs?: number } = {}) {
  const log: string[] = [];
  const store = new FakeEventStore(log);
  const bus = new FakeBus(log);
  const errors: unknown[] = [];
  const j = new RunJournal(store, bus, clock, 'run-1', opts.lastSeq ?? 0, opts.epoch ?? 3, opts.mask, opts.holdLimitMs);
  j.onError = (err) => errors.push(err);
  return { j, store, bus, log, errors };
}

describe('RunJournal: group commit', () => {
  it('numbers events after the last sequence and writes everything of one turn in one flush, with the patch and the snapshot', async () => {
    const { j, store, bus } = journal({ lastSeq: 7 });
    const state = { n: 1 };
    expect(j.append({ event: 'node_started', data: { id: 'a' } })).toBe(8);
    expect(j.append({ event: 'node_finished', data: { id: 'a' } })).toBe(9);
    j.patchRun({ total_steps: 1 });
    j.saveSnapshot(() => state);
    state.n = 2; // serialized at the flush, so the latest state is what is saved
    expect(store.writes).toHaveLength(0); // nothing is written in the turn of the appends
    await turn();
    await j.flush();
    expect(store.writes).toHaveLength(1);
    const w = store.writes[0]!;
    expect(w).toMatchObject({ runId: 'run-1', epoch: 3, now: clock.now(), patch: { total_steps: 1 } });
    expect(w.events.map((e) => [e.seq, e.event])).toEqual([
      [8, 'node_started'],
      [9, 'node_finished'],
    ]);
    expect(JSON.parse(w.events[0]!.payload)).toEqual({ event: 'node_started', data: { id: 'a' } });
    expect(store.snapshots).toEqual(['{"n":2}']);
    expect(bus.published).toEqual([[runChannel('run-1'), '9']]);
    expect(j.lastSeq).toBe(9);
  });

  it('rings the doorbell only after the flush has committed, and not for a flush without events', async () => {
    const { j, store, log } = journal();
    let release!: () => void;
    store.gate = new Promise((r) => (release = r));
    j.append({ event: 'workflow_started' });
    const flushed = j.flush();
    await turn();
    expect(log).toEqual(['flush 0 start']); // in flight: no doorbell yet
    release();
    await flushed;
    expect(log).toEqual(['flush 0 start', 'flush 0 end', 'publish 1']);
    j.patchRun({ status: 'succeeded' });
    await j.flush();
    expect(log.slice(3)).toEqual(['flush 1 start', 'flush 1 end']); // a row change alone rings nothing
  });

  it('runs flushes one after another: appends made while a flush is in flight go in the next one', async () => {
    const { j, store, log } = journal();
    let release!: () => void;
    store.gate = new Promise((r) => (release = r));
    j.append({ event: 'workflow_started' });
    const first = j.flush();
    await turn();
    j.append({ event: 'node_started' });
    const second = j.flush();
    await turn();
    expect(store.writes).toHaveLength(1);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(['flush 0 start', 'flush 0 end', 'publish 1', 'flush 1 start', 'flush 1 end', 'publish 2']);
    expect(store.writes.map((w) => w.events.map((e) => e.seq))).toEqual([[1], [2]]);
  });

  it('writes nothing when nothing is queued, and passes the PostgreSQL hold limit with each flush', async () => {
    const { j, store } = journal({ holdLimitMs: 5000 });
    await j.flush();
    expect(store.writes).toHaveLength(0);
    j.append({ event: 'workflow_started' });
    await j.flush();
    expect(store.writes[0]!.holdLimitMs).toBe(5000);
  });

  it('refuses to record a handed-back run as ended', () => {
    const { j } = journal();
    expect(() => j.patchRun({ status: 'handed-back' as never })).toThrow(/handed-back run is not ended/);
  });

  it('masks secret values in events and snapshots', async () => {
    const mask = new SecretMask({ API_KEY: 's3cr3t-value' });
    const { j, store } = journal({ mask });
    j.append({ event: 'node_finished', data: { outputs: { text: 'key s3cr3t-value here' } } });
    j.saveSnapshot(() => ({ pool: { k: 's3cr3t-value' } }));
    await j.flush();
    expect(store.writes[0]!.events[0]!.payload).not.toContain('s3cr3t-value');
    expect(store.snapshots[0]).not.toContain('s3cr3t-value');
  });
});

describe('RunJournal: fencing and the error latch', () => {
  it('a flush the store refuses (another owner holds a higher epoch) fails with FencedOut and stops the journal', async () => {
    const { j, store, bus, errors } = journal({ epoch: 4 });
    store.answers = [false];
    j.append({ event: 'node_started' });
    await expect(j.flush()).rejects.toBeInstanceOf(FencedOut);
    await expect(j.flush()).rejects.toThrow(/this owner's epoch 4 is stale/);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(FencedOut);
    expect(j.error).toBe(errors[0]);
    expect(bus.published).toEqual([]); // nothing was committed, so nothing rings
    // later appends are dropped: no sequence number is taken and nothing more is written
    expect(j.append({ event: 'node_finished' })).toBe(1);
    j.patchRun({ total_steps: 2 });
    await turn();
    await expect(j.flush()).rejects.toBeInstanceOf(FencedOut);
    expect(store.writes).toHaveLength(1);
  });

  it('latches the first database error, reports it once through onError (a background flush too) and drops what was queued', async () => {
    const { j, store, errors } = journal();
    const boom = new Error('disk I/O error');
    store.answers = [boom];
    j.append({ event: 'node_started' });
    j.saveSnapshot(() => ({ a: 1 }));
    // no explicit flush: the scheduled one fails in the background
    await turn();
    await turn();
    expect(errors).toEqual([boom]);
    expect(j.error).toBe(boom);
    store.answers = [true]; // the store would work again: the journal stays stopped
    j.append({ event: 'node_finished' });
    await expect(j.flush()).rejects.toBe(boom);
    expect(store.writes).toHaveLength(1);
    expect(errors).toEqual([boom]);
  });

  it('a flush queued behind a failing one fails with the same error and writes nothing', async () => {
    const { j, store, errors } = journal();
    const boom = new Error('connection terminated');
    let release!: () => void;
    store.gate = new Promise((r) => (release = r));
    store.answers = [boom];
    j.append({ event: 'workflow_started' });
    const first = j.flush();
    j.append({ event: 'node_started' });
    const second = j.flush();
    release();
    await expect(first).rejects.toBe(boom);
    await expect(second).rejects.toBe(boom);
    expect(store.writes).toHaveLength(1);
    expect(errors).toEqual([boom]);
  });
});
