import { describe, expect, it } from 'vitest';
import { Cancellation, fromSignal } from '../../src/lib/cancellation.js';

describe('Cancellation', () => {
  it('runs each listener once on the first abort, with that abort’s reason', () => {
    const c = new Cancellation();
    const calls: string[] = [];
    c.onAbort(() => calls.push('a'));
    const removeB = c.onAbort(() => calls.push('b'));
    c.onAbort(() => calls.push('c'));
    removeB();
    expect(c.aborted).toBe(false);
    const reason = new Error('first');
    c.abort(reason);
    c.abort(new Error('second'));
    expect(calls).toEqual(['a', 'c']);
    expect(c.aborted).toBe(true);
    expect(c.reason).toBe(reason);
    // a listener added afterwards never runs, as an `abort` listener added to an aborted signal
    c.onAbort(() => calls.push('late'));
    expect(calls).toEqual(['a', 'c']);
  });

  it('aborts with an AbortError by default, as AbortController does', () => {
    const c = new Cancellation();
    c.abort();
    expect(c.reason).toBeInstanceOf(DOMException);
    expect((c.reason as DOMException).name).toBe('AbortError');
  });

  it('makes its AbortSignal on first use: one made before an abort follows it, one made after is aborted', () => {
    const before = new Cancellation();
    const signal = before.signal;
    expect(before.signal).toBe(signal);
    let heard: unknown;
    signal.addEventListener('abort', () => (heard = signal.reason));
    const reason = new Error('stop');
    before.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(heard).toBe(reason);

    const after = new Cancellation();
    after.abort(reason);
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(reason);
  });

  it('fromSignal reads an AbortSignal as a cancel source (and its listener can be removed)', () => {
    const ac = new AbortController();
    const source = fromSignal(ac.signal);
    const calls: string[] = [];
    source.onAbort(() => calls.push('kept'));
    const remove = source.onAbort(() => calls.push('removed'));
    remove();
    ac.abort('why');
    expect(source.aborted).toBe(true);
    expect(source.reason).toBe('why');
    expect(calls).toEqual(['kept']);
    expect(fromSignal(ac.signal).onAbort(() => calls.push('late'))).toBeTypeOf('function');
    expect(calls).toEqual(['kept']);
  });
});
