import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../../src/infra/bus/bus.js';

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
};

/** The contract every Bus implementation meets; each implementation's test calls this. */
export function describeBusContract(name: string, create: () => Promise<Bus>, destroy: (bus: Bus) => Promise<void>): void {
  describe(`Bus contract: ${name}`, () => {
    let a: Bus;
    let b: Bus;
    beforeAll(async () => {
      a = await create();
      b = await create();
    });
    afterAll(async () => {
      if (a) await destroy(a);
      if (b) await destroy(b);
    });

    it('delivers a published message to every subscriber of the channel, in order', async () => {
      const got1: string[] = [];
      const got2: string[] = [];
      const u1 = await a.subscribe('c1', (m) => got1.push(m));
      const u2 = await a.subscribe('c1', (m) => got2.push(m));
      for (const m of ['1', '2', '3']) await a.publish('c1', m);
      await until(() => got1.length === 3 && got2.length === 3, 'three messages');
      expect(got1).toEqual(['1', '2', '3']);
      expect(got2).toEqual(['1', '2', '3']);
      await u1();
      await u2();
    });

    it('does not deliver other channels, nor after unsubscribe', async () => {
      const got: string[] = [];
      const u = await a.subscribe('c2', (m) => got.push(m));
      await a.publish('c3', 'other');
      await a.publish('c2', 'mine');
      await until(() => got.length === 1, 'one message');
      await u();
      await a.publish('c2', 'late');
      await a.publish('c2', 'later');
      const probe: string[] = [];
      const up = await a.subscribe('c2', (m) => probe.push(m));
      await a.publish('c2', 'probe');
      await until(() => probe.length === 1, 'probe');
      await up();
      expect(got).toEqual(['mine']);
    });

    it('a subscriber that throws does not stop the others', async () => {
      const got: string[] = [];
      const u1 = await a.subscribe('c4', () => {
        throw new Error('bad subscriber');
      });
      const u2 = await a.subscribe('c4', (m) => got.push(m));
      await a.publish('c4', 'x');
      await until(() => got.length === 1, 'delivery');
      await u1();
      await u2();
    });

    it('reaches subscribers of another instance when the bus is shared (memory: same instance only)', async () => {
      const got: string[] = [];
      const u = await b.subscribe('c5', (m) => got.push(m));
      await a.publish('c5', 'cross');
      if (name === 'memory') {
        await b.publish('c5', 'cross');
      }
      await until(() => got.length >= 1, 'cross delivery');
      expect(got[0]).toBe('cross');
      await u();
    });
  });
}
