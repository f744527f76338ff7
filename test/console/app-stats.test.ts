import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DailyStats, StatsApp } from '../../src/console/app-stats.js';
import { resolveRange } from '../../src/console/stats-range.js';
import { startStatsTraffic, type SentMessage, type StatsTraffic } from '../helpers/console-stats-traffic.js';

/**
 * The console's monitoring figures (issue #44) over traffic made through the Service API: a chat
 * app and a workflow app, with latencies made known by a clock the fake model moves, prices from
 * the configured price table, feedback and a failure; each figure checked per local day, in two
 * time zones (one across a DST change).
 */

let t: StatsTraffic;
let s: StatsTraffic['s'];
let chat: StatsTraffic['chat'];
let flow: StatsTraffic['flow'];

beforeAll(async () => {
  t = await startStatsTraffic();
  ({ s, chat, flow } = t);
});
afterAll(async () => t?.close());

type Sent = SentMessage;
const message = (at: number, user: string, latency: number, conversationId = '', fail = false) => t.message(at, user, latency, conversationId, fail);
const run = (at: number, user: string, latency: number, fail = false) => t.run(at, user, latency, fail);
const like = (messageId: string, user: string, rating: 'like' | 'dislike') => t.feedback(messageId, user, rating);
const at = (iso: string) => Date.parse(iso);
const apps = (...which: ('chat' | 'flow')[]): StatsApp[] => t.apps(...which);
async function stats(which: StatsApp[], start: string, end: string, timezone: string): Promise<Map<string, DailyStats>> {
  const r = await s.runtime.appStats.daily(which, resolveRange({ start, end, timezone }, 366));
  return new Map(r.days.map((d) => [d.date, d]));
}
const money = (n: number) => n.toFixed(7);

describe('console monitoring figures, per local day, from Service API traffic', () => {
  let m1: Sent, m2: Sent, m3: Sent, m4: Sent, m5: Sent;
  let r1: { tokens: number }, r2: { tokens: number }, r3: { tokens: number };

  beforeAll(async () => {
    // Asia/Shanghai is UTC+8: 17:00Z on the 10th is 01:00 on the 11th there
    m1 = await message(at('2026-03-10T02:00:00Z'), 'alice', 1000);
    m2 = await message(at('2026-03-10T03:00:00Z'), 'alice', 3000, m1.conversationId);
    m3 = await message(at('2026-03-10T17:00:00Z'), 'bob', 2000);
    await message(at('2026-03-11T05:00:00Z'), 'bob', 0, m3.conversationId, true);
    // the failed answer keeps the prompt tokens (and their price) of the call that failed; the API does not answer them, the row has them
    const failed = await s.runtime.store.db.selectFrom('messages').select(['prompt_tokens', 'completion_tokens', 'total_price']).where('status', '=', 'error').executeTakeFirstOrThrow();
    m4 = { id: '', conversationId: m3.conversationId, tokens: Number(failed.prompt_tokens) + Number(failed.completion_tokens), price: Number(failed.total_price) };
    m5 = await message(at('2026-03-11T06:00:00Z'), 'alice', 4000, m1.conversationId);
    await like(m1.id, 'alice', 'like');
    await like(m3.id, 'bob', 'dislike');
    await like(m5.id, 'alice', 'like');
    // New York moves from UTC-5 to UTC-4 at 07:00Z on 2026-03-08: 04:30Z on the 9th is 00:30 on the 9th there (EDT), 23:30 on the 8th under EST
    r1 = await run(at('2026-03-09T04:30:00Z'), 'carol', 1500);
    r2 = await run(at('2026-03-09T12:00:00Z'), 'carol', 2500);
    r3 = await run(at('2026-03-09T13:00:00Z'), 'dave', 0, true);
  });

  it('the stored rows carry the latencies the clock made (the test data is what it claims)', async () => {
    const rows = await s.runtime.store.db.selectFrom('messages').select(['id', 'latency', 'status']).where('app_id', '=', chat.appId).orderBy('created_at').execute();
    expect(rows.map((r) => [Number(r.latency), r.status])).toEqual([
      [1, 'normal'],
      [3, 'normal'],
      [2, 'normal'],
      [0, 'error'],
      [4, 'normal'],
    ]);
    const runs = await s.runtime.store.db.selectFrom('workflow_runs').select(['elapsed_ms', 'status']).where('app_id', '=', flow.appId).orderBy('created_at').execute();
    expect(runs.map((r) => [Number(r.elapsed_ms), r.status])).toEqual([
      [1500, 'succeeded'],
      [2500, 'succeeded'],
      [0, 'failed'],
    ]);
  });

  it('a chat app in Asia/Shanghai: every figure of each local day', async () => {
    const days = await stats(apps('chat'), '2026-03-10', '2026-03-12', 'Asia/Shanghai');
    expect([...days.keys()]).toEqual(['2026-03-10', '2026-03-11']);
    expect(days.get('2026-03-10')).toEqual({
      date: '2026-03-10',
      messages: 2,
      conversations: 1,
      runs: 0,
      end_users: 1,
      // alice's conversation started that day and has three messages (one sent the next day)
      messages_per_conversation: 3,
      runs_per_end_user: null,
      tokens: m1.tokens + m2.tokens,
      cost: [{ currency: 'USD', total_price: money(m1.price + m2.price) }],
      latency_avg_ms: 2000,
      latency_p95_ms: 3000,
      finished: 2,
      errors: 0,
      error_rate: 0,
      likes: 1,
      satisfaction: 500,
    });
    expect(days.get('2026-03-11')).toEqual({
      date: '2026-03-11',
      messages: 3,
      conversations: 2,
      runs: 0,
      end_users: 2,
      messages_per_conversation: 2,
      runs_per_end_user: null,
      tokens: m3.tokens + m4.tokens + m5.tokens,
      cost: [{ currency: 'USD', total_price: money(m3.price + m4.price + m5.price) }],
      latency_avg_ms: 2000,
      // nearest rank: the 3rd of [0, 2000, 4000]
      latency_p95_ms: 4000,
      finished: 3,
      errors: 1,
      error_rate: 0.3333,
      likes: 1,
      satisfaction: 333.33,
    });
    expect(m1.tokens).toBeGreaterThan(0);
    expect(m1.price).toBeGreaterThan(0);
  });

  it('the same messages in UTC fall on other days', async () => {
    const days = await stats(apps('chat'), '2026-03-10', '2026-03-12', 'UTC');
    expect(days.get('2026-03-10')).toMatchObject({ messages: 3, conversations: 2, end_users: 2, latency_avg_ms: 2000, latency_p95_ms: 3000 });
    expect(days.get('2026-03-11')).toMatchObject({ messages: 2, conversations: 2, end_users: 2, errors: 1, error_rate: 0.5 });
  });

  it('a workflow app across the DST change in America/New_York', async () => {
    const days = await stats(apps('flow'), '2026-03-07', '2026-03-10', 'America/New_York');
    expect([...days.keys()]).toEqual(['2026-03-07', '2026-03-08', '2026-03-09']);
    expect(days.get('2026-03-08')).toMatchObject({ runs: 0, end_users: 0, latency_avg_ms: null, error_rate: null });
    expect(days.get('2026-03-09')).toEqual({
      date: '2026-03-09',
      messages: 0,
      conversations: 0,
      runs: 3,
      end_users: 2,
      messages_per_conversation: null,
      runs_per_end_user: 1.5,
      tokens: r1.tokens + r2.tokens + r3.tokens,
      // runs store no price (as Dify's workflow token-costs)
      cost: [],
      latency_avg_ms: round1((1500 + 2500 + 0) / 3),
      latency_p95_ms: 2500,
      finished: 3,
      errors: 1,
      error_rate: 0.3333,
      likes: 0,
      satisfaction: null,
    });
    expect(r1.tokens).toBeGreaterThan(0);
  });

  it('the whole workspace adds the chat and workflow figures', async () => {
    const days = await stats(apps('chat', 'flow'), '2026-03-09', '2026-03-11', 'UTC');
    expect(days.get('2026-03-09')).toMatchObject({ runs: 3, messages: 0, end_users: 2, errors: 1 });
    expect(days.get('2026-03-10')).toMatchObject({
      messages: 3,
      runs: 0,
      end_users: 2,
      tokens: m1.tokens + m2.tokens + m3.tokens,
      latency_avg_ms: 2000,
      latency_p95_ms: 3000,
      likes: 1,
      satisfaction: 333.33,
    });
  });

  it('the 95th percentile is the nearest rank of a day with twenty latencies', async () => {
    // 100 ms … 2,000 ms in a shuffled order on 2026-03-20 (UTC): the 19th smallest of 20 is 1,900 ms
    const latencies = Array.from({ length: 20 }, (_, i) => ((i * 7) % 20) * 100 + 100);
    for (const [i, ms] of latencies.entries()) await run(at('2026-03-20T08:00:00Z') + i * 60_000, `p95-${i % 4}`, ms);
    const day = (await stats(apps('flow'), '2026-03-20', '2026-03-21', 'UTC')).get('2026-03-20')!;
    expect(day).toMatchObject({ runs: 20, end_users: 4, runs_per_end_user: 5, latency_avg_ms: 1050, latency_p95_ms: 1900, errors: 0, error_rate: 0 });
  });

  it('a range without data is every day empty; an app of no kind reads nothing', async () => {
    const days = await stats(apps('chat', 'flow'), '2026-02-01', '2026-02-04', 'Europe/Berlin');
    expect([...days.values()].every((d) => d.messages === 0 && d.runs === 0 && d.latency_avg_ms === null && d.cost.length === 0)).toBe(true);
    expect(days.size).toBe(3);
    expect((await s.runtime.appStats.daily([], resolveRange({ start: '2026-03-09', end: '2026-03-10', timezone: 'UTC' }, 366))).days).toHaveLength(1);
  });
});

const round1 = (v: number) => Math.round(v * 10) / 10;
