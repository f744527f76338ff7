import { describe, expect, it } from 'vitest';
import { ActiveRequests, effectiveLimit } from '../../src/infra/active-requests.js';
import { StopRequested, TaskRegistry } from '../../src/messages/task-registry.js';

describe('ActiveRequests', () => {
  it('counts slots per key, refuses over the limit with 429 naming it, and releases once', () => {
    const a = new ActiveRequests();
    const r1 = a.acquire('app-1', 2);
    const r2 = a.acquire('app-1', 2);
    a.acquire('app-2', 2);
    let err: unknown;
    try {
      a.acquire('app-1', 2);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'too_many_requests', status: 429, headers: { 'retry-after': '1' } });
    expect((err as Error).message).toContain('app-1 is 2');
    r1();
    r1();
    expect(a.count('app-1')).toBe(1);
    a.acquire('app-1', 2)();
    r2();
    expect(a.count('app-1')).toBe(0);
    expect(a.count('app-2')).toBe(1);
  });

  it('limit 0 is unlimited; the effective limit is the smallest positive of app and instance', () => {
    const a = new ActiveRequests();
    for (let i = 0; i < 100; i++) a.acquire('x', 0);
    expect(a.count('x')).toBe(100);
    expect(effectiveLimit(null, 0)).toBe(0);
    expect(effectiveLimit(3, 0)).toBe(3);
    expect(effectiveLimit(null, 5)).toBe(5);
    expect(effectiveLimit(8, 5)).toBe(5);
    expect(effectiveLimit(0, 5)).toBe(5);
  });
});

describe('TaskRegistry', () => {
  it('only the owning app and end user can stop a task; the reason is StopRequested', () => {
    const t = new TaskRegistry();
    const controller = new AbortController();
    const unregister = t.register('task', { appId: 'a', endUserId: 'u', controller });
    expect(t.stop('task', 'a', 'other')).toBe(false);
    expect(t.stop('task', 'b', 'u')).toBe(false);
    expect(t.stop('nope', 'a', 'u')).toBe(false);
    expect(controller.signal.aborted).toBe(false);
    expect(t.stop('task', 'a', 'u')).toBe(true);
    expect(controller.signal.reason).toBeInstanceOf(StopRequested);
    unregister();
    expect(t.size).toBe(0);
    expect(t.stop('task', 'a', 'u')).toBe(false);
  });
});
