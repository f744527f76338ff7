import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStatsTraffic, type StatsTraffic } from '../helpers/console-stats-traffic.js';
import { createMember, loginHttp, type ConsoleClient } from '../helpers/console.js';
import { resolveRange } from '../../src/console/stats-range.js';

/**
 * `GET /console/api/statistics` and `GET /console/api/apps/{app_id}/statistics` over real HTTP:
 * the figures the service computes, for a viewer; the session required, bad input a 400 naming the
 * field or limit, an app of another workspace a 404, the other workspace's figures its own.
 */
let t: StatsTraffic;
let viewer: ConsoleClient;
let stranger: ConsoleClient;

beforeAll(async () => {
  t = await startStatsTraffic();
  const at = (iso: string) => Date.parse(iso);
  const m = await t.message(at('2026-03-10T02:00:00Z'), 'alice', 1000);
  await t.message(at('2026-03-10T03:00:00Z'), 'alice', 3000, m.conversationId);
  await t.feedback(m.id, 'alice', 'like');
  await t.run(at('2026-03-11T05:00:00Z'), 'bob', 2000);
  t.clock.set(Date.now());
  await createMember(t.s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  await createMember(t.s, { name: 'Otto', email: 'otto@example.test', role: 'owner', workspace: 'Other team' });
  viewer = await loginHttp(t.s.url, 'vera@example.test');
  stranger = await loginHttp(t.s.url, 'otto@example.test');
});
afterAll(async () => t?.close());

const q = '?start=2026-03-10&end=2026-03-12&timezone=Asia%2FShanghai';

describe('console statistics API', () => {
  it('a viewer reads one app\'s figures and the workspace\'s, as the service computes them', async () => {
    const range = resolveRange({ start: '2026-03-10', end: '2026-03-12', timezone: 'Asia/Shanghai' }, 366);
    const one = await viewer.get<Record<string, unknown>>(`/apps/${t.chat.appId}/statistics${q}`);
    expect(one.status).toBe(200);
    const want = await t.s.runtime.appStats.daily(t.apps('chat'), range);
    expect(one.body).toEqual({ app: { id: t.chat.appId, name: 'Stats chat', mode: 'chat' }, start: '2026-03-10', end: '2026-03-12', timezone: 'Asia/Shanghai', kinds: { chat: true, workflow: false }, data: JSON.parse(JSON.stringify(want.days)) });
    expect((one.body.data as { messages: number; satisfaction: number }[])[0]).toMatchObject({ messages: 2, satisfaction: 500 });

    const all = await viewer.get<{ apps: number; kinds: unknown; data: { date: string; messages: number; runs: number }[] }>(`/statistics${q}`);
    expect(all.status).toBe(200);
    expect(all.body.apps).toBe(2);
    expect(all.body.kinds).toEqual({ chat: true, workflow: true });
    expect(all.body.data.map((d) => [d.date, d.messages, d.runs])).toEqual([
      ['2026-03-10', 2, 0],
      ['2026-03-11', 0, 1],
    ]);
  });

  it('without a session 401; bad input 400 naming the field or the limit', async () => {
    const anonymous = await fetch(`${t.s.url}/console/api/statistics${q}`);
    expect(anonymous.status).toBe(401);
    const bad = async (query: string) => viewer.get<{ code: string; message: string; status: number }>(`/statistics${query}`);
    let r = await bad('?start=2026-03-10&end=2026-03-12');
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('timezone');
    r = await bad('?start=2026-03-10&end=2026-03-12&timezone=Nowhere%2FCity');
    expect(r.body).toMatchObject({ code: 'invalid_param', status: 400, message: expect.stringContaining('timezone must be an IANA time zone') });
    r = await bad('?start=10.03.2026&end=2026-03-12&timezone=UTC');
    expect(r.body).toMatchObject({ code: 'invalid_param', message: expect.stringContaining('start must be a local date') });
    r = await bad('?start=2020-01-01&end=2026-03-12&timezone=UTC');
    expect(r.body).toMatchObject({ code: 'invalid_param', message: expect.stringContaining('CONSOLE_STATS_MAX_DAYS (366)') });
  });

  it("an app of another workspace is a 404; that workspace's figures are its own (none)", async () => {
    const r = await stranger.get<{ code: string }>(`/apps/${t.chat.appId}/statistics${q}`);
    expect(r.status).toBe(404);
    const own = await stranger.get<{ apps: number; data: { messages: number; runs: number }[] }>(`/statistics${q}`);
    expect(own.status).toBe(200);
    expect(own.body.apps).toBe(0);
    expect(own.body.data.every((d) => d.messages === 0 && d.runs === 0)).toBe(true);
  });
});
