import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onEachStore, type OpenedStore } from '../helpers/store-suites.js';
import { MessageStore } from '../../src/messages/message-store.js';
import { MessageLeases } from '../../src/messages/message-leases.js';
import { ActiveRequests } from '../../src/infra/active-requests.js';
import type { Clock } from '../../src/infra/clock.js';

/** The saver writes each live message's own answer so far, in one transaction per save. */
function suite(label: string, open: () => Promise<OpenedStore>): void {
  describe(`MessageLeases.save (${label})`, () => {
    let opened: OpenedStore;
    let now = 1_000;
    const clock: Clock = { now: () => now } as Clock;
    beforeAll(async () => {
      opened = await open();
    });
    afterAll(async () => opened?.close());

    it('writes every grown answer to its own row and a heartbeat to every live one', async () => {
      const messages = new MessageStore(opened.store.db);
      const leases = new MessageLeases({ messages, clock, logger: pino({ level: 'silent' }), config: { saveIntervalMs: 60_000, leaseMs: 10_000 }, activeRequests: new ActiveRequests() });
      const ids = Array.from({ length: 450 }, (_, i) => `lease-msg-${i}`);
      for (const id of ids) {
        await messages.insert({ id, appId: 'app-1', conversationId: null, endUserId: 'eu-1', taskId: `t-${id}`, mode: 'completion', inputs: {}, query: 'q', files: [], createdAt: now });
      }
      const live = ids.map((id) => leases.track(id));
      // more than one statement's worth of grown answers, and some unchanged
      live.forEach((m, i) => (m.answer = i % 3 === 0 ? '' : `answer of ${ids[i]} — ${"'quoted' ".repeat(i % 4)}`));
      now = 2_000;
      await leases.save();
      const rows = await opened.store.db.selectFrom('messages').select(['id', 'answer', 'heartbeat_at']).where('id', 'in', ids).execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      ids.forEach((id, i) => {
        expect(byId.get(id)?.answer).toBe(live[i]!.answer);
        expect(Number(byId.get(id)?.heartbeat_at)).toBe(2_000);
      });
      for (const m of live) m.end();
      await leases.close();
    });
  });
}

onEachStore('message-leases', suite);
