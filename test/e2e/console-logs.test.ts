import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startServer, testDialect, type TestServer } from '../helpers/server.js';
import { example } from '../helpers/fixtures.js';
import { completionApp } from '../helpers/apps.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openAiCompatibleProviders } from '../helpers/openai-providers.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, llmNode, startNode, templateNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { MessageLogs, type ConversationLogRow } from '../../src/messages/message-logs.js';
import { TraceService, type TraceBar, type RunTrace } from '../../src/runs/run-trace.js';
import { memberClient } from '../helpers/console.js';

/**
 * The console's log and trace services (issue #44) over data made through the Service API with the
 * test model server: chat, chatflow and completion apps' conversations and feedback, workflow runs
 * with parallel branches, an iteration, retries, a failure and a Human Input pause. Runs on SQLite,
 * and on PostgreSQL when TEST_DATABASE_URL is set (the postgres project).
 */

let s: TestServer;
let fake: FakeOpenAI;
const apps: Record<string, { appId: string; apiKey: string }> = {};

const headers = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' });
const post = async (k: string, path: string, body: unknown) => {
  const r = await fetch(`${s.api}${path}`, { method: 'POST', headers: headers(k), body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
const chat = async (app: string, user: string, query: string, conversationId?: string) => {
  const r = await post(apps[app]!.apiKey, '/chat-messages', { inputs: {}, query, user, response_mode: 'blocking', ...(conversationId ? { conversation_id: conversationId } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { message_id: string; conversation_id: string; answer: string };
};
const feedback = (app: string, messageId: string, user: string, rating: 'like' | 'dislike', content: string | null = null) =>
  post(apps[app]!.apiKey, `/messages/${messageId}/feedbacks`, { rating, user, content });
const runWorkflow = async (app: string, inputs: Record<string, unknown>, user = 'wf-user') => {
  const r = await post(apps[app]!.apiKey, '/workflows/run', { inputs, user, response_mode: 'blocking' });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { workflow_run_id: string; data: { status: string; error: string | null } };
};

const logs = () => s.runtime.messageLogs;
const traces = () => s.runtime.runTraces;
const appId = (name: string) => apps[name]!.appId;
async function traceOf(runId: string, afterSeq = 0, service: TraceService = traces()): Promise<RunTrace> {
  const run = await service.run((await s.runtime.store.db.selectFrom('workflow_runs').select('app_id').where('id', '=', runId).executeTakeFirstOrThrow()).app_id, runId);
  return service.trace(run!, { afterSeq });
}
const byNode = (bars: TraceBar[], nodeId: string) => bars.filter((b) => b.node_id === nodeId);

// conversations made in beforeAll, oldest first
const conv: { id: string; messages: string[] }[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI();
  s = await startServer({ runtime: { providers: openAiCompatibleProviders(fake.baseUrl) } });
  apps.chat = await s.importApp(example('chat-helper.yml').replace('provider: mock', 'provider: openai'));
  apps.chatflow = await s.importApp(example('chatflow-assistant.yml').replace('provider: mock', 'provider: openai'));
  apps.writer = await s.importApp(completionApp({ provider: 'openai' }));
  apps.branches = await s.importApp(
    workflowDsl(
      [
        startNode([{ variable: 'obj', type: 'json_object' }]),
        templateNode('left', 'L'),
        templateNode('right', 'R'),
        { id: 'it', type: 'iteration', iterator_selector: ['start', 'obj', 'items'], output_selector: ['tt', 'output'], start_node_id: 'its' },
        { id: 'its', type: 'iteration-start', parentId: 'it' },
        { id: 'tt', type: 'template-transform', parentId: 'it', template: '<{{ x }}>', variables: [{ variable: 'x', value_selector: ['it', 'item'] }] },
        endNode({ l: ['left', 'output'], r: ['right', 'output'], items: ['it', 'output'] }),
      ],
      [['start', 'left'], ['start', 'right'], ['left', 'it'], ['its', 'tt'], ['it', 'end'], ['right', 'end']],
      { name: 'branches' },
    ),
  );
  apps.failing = await s.importApp(
    workflowDsl(
      [startNode([{ variable: 'topic' }]), templateNode('prep', 'about {{ t }}', { t: ['start', 'topic'] }), llmNode('ask', '{{#prep.output#}}', { title: 'Ask', retry_config: { retry_enabled: true, max_retries: 2, retry_interval: 1 } }), endNode({ a: ['ask', 'text'] })],
      [['start', 'prep'], ['prep', 'ask'], ['ask', 'end']],
      { name: 'failing' },
    ),
  );
  apps.approval = await s.importApp(example('workflow-approval.yml'));

  // three conversations of the chat app: alice's two (the first with a like and an admin dislike), bob's one (a dislike)
  fake.behaviour = { reply: (b) => `answer to ${JSON.stringify((b.messages as { content: string }[]).at(-1)!.content)}` };
  const a1 = await chat('chat', 'alice', 'What is a dovetail joint?');
  const a1b = await chat('chat', 'alice', 'And a mortise?', a1.conversation_id);
  conv.push({ id: a1.conversation_id, messages: [a1.message_id, a1b.message_id] });
  await new Promise((r) => setTimeout(r, 5));
  const b1 = await chat('chat', 'bob', 'Price of 100% oak_wood?');
  conv.push({ id: b1.conversation_id, messages: [b1.message_id] });
  await new Promise((r) => setTimeout(r, 5));
  const a2 = await chat('chat', 'alice', 'Tell me about pine');
  conv.push({ id: a2.conversation_id, messages: [a2.message_id] });
  expect((await feedback('chat', a1.message_id, 'alice', 'like', 'clear')).status).toBe(200);
  await s.runtime.feedback.addAdmin({ messageId: a1b.message_id, rating: 'dislike', content: 'too short', account: 'ops' });
  expect((await feedback('chat', b1.message_id, 'bob', 'dislike')).status).toBe(200);
});

afterAll(async () => {
  await s?.close();
  await fake?.close();
});

describe('conversation logs', () => {
  it('lists an app\'s conversations, latest updated first, with their figures, end user and feedback summary', async () => {
    const page = await logs().conversations({ appId: appId('chat'), page: 1, limit: 20 });
    expect(page).toMatchObject({ page: 1, limit: 20, total: 3, total_capped: false, has_more: false });
    expect(page.data.map((c) => c.id)).toEqual([conv[2]!.id, conv[1]!.id, conv[0]!.id]);
    const first = page.data.find((c) => c.id === conv[0]!.id)!;
    expect(first).toMatchObject({
      message_count: 2,
      first_query: 'What is a dovetail joint?',
      end_user: { session_id: 'alice' },
      feedback: { like: 1, dislike: 1, user: { like: 1, dislike: 0 }, admin: { like: 0, dislike: 1 } },
    });
    expect(first.total_tokens).toBeGreaterThan(0);
    expect(first.total_tokens).toBe(first.prompt_tokens + first.completion_tokens);
    expect(first.average_latency).toBeGreaterThanOrEqual(0);
    expect(page.data.find((c) => c.id === conv[2]!.id)).toMatchObject({ message_count: 1, feedback: { like: 0, dislike: 0 } });
    // the chat app's log holds only its own conversations
    expect((await logs().conversations({ appId: appId('chatflow'), page: 1, limit: 20 })).total).toBe(0);
  });

  it('pages, sorts, and filters by feedback, time and keyword (literal, case-insensitive)', async () => {
    const ids = async (q: Partial<Parameters<MessageLogs['conversations']>[0]>) => (await logs().conversations({ appId: appId('chat'), page: 1, limit: 20, ...q })).data.map((c: ConversationLogRow) => c.id);
    const p1 = await logs().conversations({ appId: appId('chat'), page: 1, limit: 2, sort: 'created_at' });
    const p2 = await logs().conversations({ appId: appId('chat'), page: 2, limit: 2, sort: 'created_at' });
    expect(p1).toMatchObject({ total: 3, has_more: true });
    expect(p2).toMatchObject({ total: 3, has_more: false });
    expect([...p1.data, ...p2.data].map((c) => c.id)).toEqual(conv.map((c) => c.id));
    expect(await ids({ feedback: 'like' })).toEqual([conv[0]!.id]);
    expect(await ids({ feedback: 'dislike' })).toEqual([conv[1]!.id, conv[0]!.id]);
    expect(await ids({ feedback: 'none' })).toEqual([conv[2]!.id]);
    // the totals of rated conversations count each conversation once, in the time range asked
    const rated = (q: Partial<Parameters<MessageLogs['conversations']>[0]>) => logs().conversations({ appId: appId('chat'), page: 1, limit: 20, ...q });
    expect((await rated({ feedback: 'like' })).total).toBe(1);
    expect((await rated({ feedback: 'dislike' })).total).toBe(2);
    const newest = Math.max(...(await rated({ feedback: 'dislike' })).data.map((c) => c.updated_at));
    const later = await rated({ feedback: 'dislike', createdAfter: (newest + 2) * 1000 });
    expect(later).toMatchObject({ total: 0, data: [] });
    expect(await ids({ keyword: 'MORTISE' })).toEqual([conv[0]!.id]);
    // the answer is searched too, and `%` / `_` are literal
    expect(await ids({ keyword: 'answer to "tell' })).toEqual([conv[2]!.id]);
    expect(await ids({ keyword: '100% oak_' })).toEqual([conv[1]!.id]);
    expect(await ids({ keyword: '100%_oak' })).toEqual([]);
    const k = await logs().conversations({ appId: appId('chat'), page: 1, limit: 20, keyword: 'pine' });
    expect(k.search).toEqual({ messages: s.config.consoleLogs.searchMessages, older_than: null });
    const future = Date.now() + 60_000;
    expect(await ids({ createdAfter: future })).toEqual([]);
    expect(await ids({ createdBefore: future, feedback: 'none' })).toEqual([conv[2]!.id]);
  });

  it('a keyword searches only the newest CONSOLE_LOG_SEARCH_MESSAGES messages and says where it stopped; a long keyword is refused naming the setting', async () => {
    const narrow = new MessageLogs(s.runtime.store.db, { searchMessages: 2, keywordMaxChars: 10, countLimit: 2 });
    const page = await narrow.conversations({ appId: appId('chat'), page: 1, limit: 20, keyword: 'dovetail' });
    // the dovetail question is the oldest of four messages: outside the newest two
    expect(page.data).toEqual([]);
    expect(page.search!.messages).toBe(2);
    expect(page.search!.older_than).toEqual(expect.any(Number));
    expect(page.search!.older_than).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    // the total is counted up to the count limit
    expect(await narrow.conversations({ appId: appId('chat'), page: 1, limit: 1 })).toMatchObject({ total: 2, total_capped: true, has_more: true });
    await expect(narrow.conversations({ appId: appId('chat'), page: 1, limit: 20, keyword: 'x'.repeat(11) })).rejects.toMatchObject({
      code: 'invalid_param',
      message: expect.stringContaining('CONSOLE_LOG_KEYWORD_MAX_CHARS'),
    });
  });

  it('a conversation\'s messages, oldest first, with answers, feedback with comments, tokens and latency', async () => {
    const c = await logs().conversation(appId('chat'), conv[0]!.id, { page: 1, limit: 50 });
    expect(c).toMatchObject({ id: conv[0]!.id, message_count: 2, end_user: { session_id: 'alice' } });
    const [m1, m2] = c!.messages.data;
    expect(m1).toMatchObject({
      id: conv[0]!.messages[0],
      query: 'What is a dovetail joint?',
      answer: 'answer to "What is a dovetail joint?"',
      status: 'normal',
      workflow_run_id: null,
      feedback: { user: { rating: 'like', content: 'clear' }, admin: null },
      retriever_resources: [],
    });
    expect(m1!.total_tokens).toBeGreaterThan(0);
    expect(m1!.latency).toBeGreaterThanOrEqual(0);
    expect(m2).toMatchObject({ query: 'And a mortise?', feedback: { user: null, admin: { rating: 'dislike', content: 'too short' } } });
    const paged = await logs().conversation(appId('chat'), conv[0]!.id, { page: 2, limit: 1 });
    expect(paged!.messages).toMatchObject({ total: 2, has_more: false, data: [{ id: conv[0]!.messages[1] }] });
    // another app's conversation is not found
    expect(await logs().conversation(appId('chatflow'), conv[0]!.id, { page: 1, limit: 50 })).toBeUndefined();
  });

  it('a chatflow answer links to the run that answered it, and that run\'s trace draws', async () => {
    const a = await chat('chatflow', 'carol', 'hello flow');
    const c = await logs().conversation(appId('chatflow'), a.conversation_id, { page: 1, limit: 50 });
    const runId = c!.messages.data[0]!.workflow_run_id;
    expect(runId).toEqual(expect.any(String));
    const t = await traceOf(runId!);
    expect(t.run).toMatchObject({ id: runId, mode: 'advanced-chat', status: 'succeeded', message_id: a.message_id, conversation_id: a.conversation_id });
    expect(t.bars.map((b) => b.type)).toContain('llm');
    expect(t.bars.find((b) => b.type === 'llm')!.tokens).toBeGreaterThan(0);
  });

  it('a completion app\'s messages, newest first, filtered by feedback and keyword', async () => {
    const k = apps.writer!.apiKey;
    const ids: string[] = [];
    for (const topic of ['otters', 'beavers']) {
      const r = await post(k, '/completion-messages', { inputs: { topic }, user: 'dana', response_mode: 'blocking' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      ids.push(String(r.body.message_id));
    }
    await feedback('writer', ids[0]!, 'dana', 'like');
    const page = await logs().messages({ appId: appId('writer'), page: 1, limit: 20 });
    expect(page).toMatchObject({ total: 2, has_more: false });
    expect(page.data.map((m) => m.id)).toEqual([ids[1], ids[0]]);
    expect(page.data[1]).toMatchObject({ mode: 'completion', inputs: { topic: 'otters' }, end_user: { session_id: 'dana' }, feedback: { user: { rating: 'like' } } });
    expect((await logs().messages({ appId: appId('writer'), page: 1, limit: 20, feedback: 'like' })).data.map((m) => m.id)).toEqual([ids[0]]);
    expect((await logs().messages({ appId: appId('writer'), page: 1, limit: 20, feedback: 'none' })).data.map((m) => m.id)).toEqual([ids[1]]);
    // the keyword matches the prompt's answer text, which echoes the topic
    expect((await logs().messages({ appId: appId('writer'), page: 1, limit: 20, keyword: 'BEAVERS' })).data.map((m) => m.id)).toEqual([ids[1]]);
    expect(await logs().message(appId('writer'), ids[0]!)).toMatchObject({ id: ids[0] });
    expect(await logs().message(appId('chat'), ids[0]!)).toBeUndefined();
  });
});

describe('workflow runs and their traces', () => {
  it('lists a workflow app\'s runs with status, duration, tokens, steps and end user, filtered by status and time', async () => {
    const ok = await runWorkflow('branches', { obj: { items: ['a', 'b', 'c'] } }, 'erin');
    fake.behaviour = { failStatus: 500, failMessage: 'upstream broke' };
    const bad = await runWorkflow('failing', { topic: 'joinery' }, 'frank');
    fake.behaviour = {};
    expect(ok.data.status).toBe('succeeded');
    expect(bad.data.status).toBe('failed');
    const all = await s.runtime.workflowLogs.consolePage(appId('branches'), { page: 1, limit: 20 }, 100);
    expect(all).toMatchObject({ total: 1, total_capped: false, has_more: false, data: [{ id: ok.workflow_run_id, status: 'succeeded', end_user: { session_id: 'erin' }, triggered_from: 'app-run' }] });
    expect(all.data[0]!.total_steps).toBeGreaterThan(4);
    expect(all.data[0]!.elapsed_time).toBeGreaterThanOrEqual(0);
    const failed = await s.runtime.workflowLogs.consolePage(appId('failing'), { page: 1, limit: 20, status: 'failed' }, 100);
    expect(failed.data.map((r) => [r.id, r.status])).toEqual([[bad.workflow_run_id, 'failed']]);
    expect(failed.data[0]!.error).toContain('upstream broke');
    expect((await s.runtime.workflowLogs.consolePage(appId('failing'), { page: 1, limit: 20, status: 'succeeded' }, 100)).total).toBe(0);
    expect((await s.runtime.workflowLogs.consolePage(appId('failing'), { page: 1, limit: 20, createdAfter: Date.now() + 60_000 }, 100)).total).toBe(0);
  });

  it('a run\'s trace: a bar per node execution, parallel branches apart, iteration rounds under their container', async () => {
    const r = await runWorkflow('branches', { obj: { items: ['x', 'y'] } });
    const t = await traceOf(r.workflow_run_id);
    expect(t).toMatchObject({ more: false, live: false, history_capped: false, pauses: [], errors: [] });
    expect(t.run).toMatchObject({ status: 'succeeded', mode: 'workflow' });
    for (const b of t.bars) {
      expect(b.end_ms, b.node_id).not.toBeNull();
      expect(b.end_ms!).toBeGreaterThanOrEqual(b.start_ms);
      expect(b.status, b.node_id).toBe('succeeded');
      expect(b.finished_seq).toBeGreaterThan(b.started_seq);
    }
    const [left] = byNode(t.bars, 'left');
    const [right] = byNode(t.bars, 'right');
    const [start] = byNode(t.bars, 'start');
    // the fan-out from start: one branch continues start's, the other is a new one
    expect(new Set([left!.branch, right!.branch])).toEqual(new Set([start!.branch, start!.branch + 1]));
    expect(left!.parent).toBeNull();
    const [it] = byNode(t.bars, 'it');
    expect(it!.rounds!.map((x) => x.index)).toEqual([0, 1]);
    const children = byNode(t.bars, 'tt');
    expect(children.map((c) => c.parent)).toEqual([
      { type: 'iteration', node_id: 'it', execution_id: it!.id, round: 0 },
      { type: 'iteration', node_id: 'it', execution_id: it!.id, round: 1 },
    ]);
    // a node execution's inputs and outputs, on demand
    const run = (await traces().run(appId('branches'), r.workflow_run_id))!;
    const detail = await traces().node(run, children[1]!.id);
    expect(detail).toMatchObject({ node_id: 'tt', status: 'succeeded', inputs: { x: 'y' }, outputs: { output: '<y>' } });
    expect(await traces().node(run, '00000000-0000-4000-8000-000000000000')).toBeUndefined();
    await expect(traces().node(run, 'nope')).rejects.toMatchObject({ code: 'invalid_param' });
    // a run of another app is not found
    expect(await traces().run(appId('chat'), r.workflow_run_id)).toBeUndefined();
  });

  it('a failed run: its retries, the failing node\'s error, and a bounded read in windows that add up to the whole', async () => {
    const failedRun = (await s.runtime.workflowLogs.consolePage(appId('failing'), { page: 1, limit: 1, status: 'failed' }, 100)).data[0]!;
    const t = await traceOf(failedRun.id);
    const [ask] = byNode(t.bars, 'ask');
    expect(ask).toMatchObject({ status: 'failed', retry_index: 2, title: 'Ask' });
    expect(ask!.retries.map((x) => x.index)).toEqual([0, 1]);
    expect(ask!.retries[0]!.error).toContain('upstream broke');
    expect(ask!.error).toContain('upstream broke');
    expect(t.errors).toEqual([{ execution_id: ask!.id, node_id: 'ask', title: 'Ask', error: ask!.error }]);
    expect(t.run.error).toContain('upstream broke');
    const run = (await traces().run(appId('failing'), failedRun.id))!;
    // the failing node's input: the prompt it sent (its process data), as Dify records a failed node's
    expect(await traces().node(run, ask!.id)).toMatchObject({ status: 'failed', error: ask!.error, retries: [{ index: 0 }, { index: 1 }], process_data: { prompts: [{ role: 'user', content: 'about joinery' }], model_provider: 'openai' } });
    // the node before it ran with the input the failing node was given
    const [prep] = byNode(t.bars, 'prep');
    expect(await traces().node(run, prep!.id)).toMatchObject({ inputs: { t: 'joinery' }, outputs: { output: 'about joinery' } });

    // three events at a time: the windows, merged by id, are the whole trace
    const small = new TraceService(s.runtime.store.db, { maxEvents: 3 });
    const merged = new Map<string, TraceBar>();
    let after = 0;
    let calls = 0;
    for (;;) {
      const w = await traceOf(failedRun.id, after, small);
      calls++;
      for (const b of w.bars) merged.set(b.id, b);
      after = w.last_seq;
      if (!w.more) break;
    }
    expect(calls).toBeGreaterThan(2);
    expect([...merged.values()].sort((a, b) => a.started_seq - b.started_seq)).toEqual(t.bars);
  });

  it('a Human Input pause: the paused node, the form and its link; after the form is filled the next read adds only what changed', async () => {
    const k = apps.approval!.apiKey;
    const r = await fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(k), body: JSON.stringify({ inputs: { draft: 'Ship it' }, response_mode: 'streaming', user: 'gus' }) });
    const events = dataFrames(parseSse(await r.text()));
    const runId = String(events[0]!.workflow_run_id);
    const required = events.find((e) => e.event === 'human_input_required')!.data as { form_token: string; form_id: string };
    const paused = await traceOf(runId);
    expect(paused.run.status).toBe('paused');
    expect(paused.live).toBe(true);
    expect(paused.pauses).toEqual([
      expect.objectContaining({ node_id: 'review', form_id: required.form_id, form_token: required.form_token, form_url: `/form/${encodeURIComponent(required.form_token)}`, outcome: 'waiting', resumed_at_ms: null }),
    ]);
    const [review] = byNode(paused.bars, 'review');
    expect(review).toMatchObject({ status: 'paused' });
    expect(review!.end_ms).not.toBeNull();

    const submit = await post(k, `/form/human_input/${required.form_token}`, { inputs: { comment: 'great' }, action: 'approve', user: 'gus' });
    expect(submit.status).toBe(200);
    let next: RunTrace | undefined;
    for (let i = 0; i < 200; i++) {
      next = await traceOf(runId, paused.last_seq);
      if (next.run.status === 'succeeded' && !next.more) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    expect(next!.run.status).toBe('succeeded');
    expect(next!.live).toBe(false);
    expect(next!.pauses).toEqual([expect.objectContaining({ key: paused.pauses[0]!.key, outcome: 'filled', action: 'Approve' })]);
    expect(next!.pauses[0]!.resumed_at_ms).toEqual(expect.any(Number));
    // only the executions after the pause: the review node ran again, then what follows it
    expect(next!.bars.map((b) => b.node_id)).not.toContain('start');
    const again = byNode(next!.bars, 'review');
    expect(again).toHaveLength(1);
    expect(again[0]!.id).not.toBe(review!.id);
    expect(again[0]!.status).toBe('succeeded');
  });

  it('a running run\'s trace shows the node in flight, and the next read finishes its bar', async () => {
    const slow = await s.importApp(workflowDsl([startNode(), llmNode('slow', 'take your time'), endNode({ a: ['slow', 'text'] })], [['start', 'slow'], ['slow', 'end']], { name: 'slow' }));
    fake.behaviour = { reply: 'one two three four five six', chunkSize: 3, delayMs: 80 };
    const res = fetch(`${s.api}/workflows/run`, { method: 'POST', headers: headers(slow.apiKey), body: JSON.stringify({ inputs: {}, user: 'hal', response_mode: 'streaming' }) });
    let runId: string | undefined;
    let running: RunTrace | undefined;
    for (let i = 0; i < 400 && !running; i++) {
      const row = await s.runtime.store.db.selectFrom('workflow_runs').select('id').where('app_id', '=', slow.appId).executeTakeFirst();
      if (row) {
        runId = row.id;
        const t = await traceOf(runId);
        if (byNode(t.bars, 'slow').length === 1) running = t;
      }
      if (!running) await new Promise((r) => setTimeout(r, 10));
    }
    expect(running, 'the llm node started').toBeDefined();
    const [inFlight] = byNode(running!.bars, 'slow');
    expect(inFlight).toMatchObject({ status: 'running', end_ms: null, finished_seq: null });
    expect(running!.live).toBe(true);
    await (await res).text();
    fake.behaviour = {};
    const later = await traceOf(runId!, running!.last_seq);
    const [done] = byNode(later.bars, 'slow');
    expect(done).toMatchObject({ id: inFlight!.id, status: 'succeeded', start_ms: inFlight!.start_ms });
    expect(done!.tokens).toBeGreaterThan(0);
    expect(later.bars.map((b) => b.node_id)).not.toContain('start');
    expect(later.live).toBe(false);
  });
});

describe('the console API of the logs (/console/api)', () => {
  it('serves the logs to a viewer of the app\'s workspace, 404 to another workspace, 400 naming a bad field, 401 without a session', async () => {
    const viewer = await memberClient(s, { name: 'Vic', email: 'vic@example.test', role: 'viewer' });
    const list = await viewer.get<{ data: { id: string }[]; total: number }>(`/apps/${appId('chat')}/conversations?limit=2&sort_by=created_at`);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 3, has_more: true, page: 1, limit: 2 });
    expect(list.body.data.map((c) => c.id)).toEqual([conv[0]!.id, conv[1]!.id]);
    expect((await viewer.get(`/apps/${appId('chat')}/conversations?feedback=none&end=2000-01-01`)).body).toMatchObject({ total: 0 });
    const c = await viewer.get<{ messages: { data: { query: string }[] } }>(`/apps/${appId('chat')}/conversations/${conv[0]!.id}`);
    expect(c.body.messages.data.map((m) => m.query)).toEqual(['What is a dovetail joint?', 'And a mortise?']);
    expect((await viewer.get(`/apps/${appId('writer')}/messages`)).body).toMatchObject({ total: 2 });
    const runs = await viewer.get<{ data: { id: string; status: string }[] }>(`/apps/${appId('failing')}/runs?status=failed`);
    expect(runs.body.data).toHaveLength(1);
    const runId = runs.body.data[0]!.id;
    const trace = await viewer.get<RunTrace>(`/apps/${appId('failing')}/runs/${runId}/trace`);
    expect(trace.body.bars.map((b) => b.node_id)).toEqual(['start', 'prep', 'ask']);
    const again = await viewer.get<RunTrace>(`/apps/${appId('failing')}/runs/${runId}/trace?after_seq=${trace.body.last_seq}`);
    expect(again.body).toMatchObject({ bars: [], more: false, live: false, last_seq: trace.body.last_seq });
    const ask = trace.body.bars.find((b) => b.node_id === 'ask')!;
    expect((await viewer.get(`/apps/${appId('failing')}/runs/${runId}/nodes/${ask.id}`)).body).toMatchObject({ status: 'failed', process_data: { prompts: [{ content: 'about joinery' }] } });
    // a run is looked up under its own app only
    expect((await viewer.get(`/apps/${appId('branches')}/runs/${runId}/trace`)).status).toBe(404);

    for (const [path, field] of [
      [`/apps/${appId('chat')}/conversations?feedback=meh`, 'feedback'],
      [`/apps/${appId('chat')}/conversations?start=yesterday`, 'start'],
      [`/apps/${appId('chat')}/conversations?limit=500`, 'limit'],
      [`/apps/${appId('failing')}/runs?status=done`, 'status'],
      [`/apps/${appId('failing')}/runs/${runId}/trace?after_seq=-1`, 'after_seq'],
      [`/apps/${appId('failing')}/conversations`, 'app_id'],
    ] as const) {
      const r = await viewer.get<{ code: string; message: string }>(path);
      expect(r.status, path).toBe(400);
      expect(r.body.code, path).toBe('invalid_param');
      expect(r.body.message, path).toContain(field);
    }

    const stranger = await memberClient(s, { name: 'Sam', email: 'sam@example.test', role: 'owner', workspace: 'Elsewhere' });
    for (const path of [`/apps/${appId('chat')}/conversations`, `/apps/${appId('failing')}/runs/${runId}/trace`, `/apps/${appId('chat')}/conversations/${conv[0]!.id}`]) {
      const r = await stranger.get<{ code: string }>(path);
      expect(r.status, path).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
    const anonymous = await fetch(`${s.url}/console/api/apps/${appId('chat')}/conversations`);
    expect(anonymous.status).toBe(401);
  });
});

describe('the indexes of migration 031', () => {
  /** The plan of `query` on this database, one string (PostgreSQL told to avoid sequential and bitmap scans and sorts: the test tables are tiny). */
  async function plan(query: string): Promise<string> {
    const db = s.runtime.store.db;
    if (testDialect() === 'postgres') {
      return db.transaction().execute(async (tx) => {
        for (const off of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await sql.raw(`SET LOCAL ${off} = off`).execute(tx);
        const r = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${sql.raw(query)}`.execute(tx);
        return r.rows.map((x) => x['QUERY PLAN']).join('\n');
      });
    }
    const r = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${sql.raw(query)}`.execute(db);
    return r.rows.map((x) => x.detail).join('\n');
  }

  it('serve the log pages and the trace', async () => {
    const app = `'${appId('chat')}'`;
    expect(await plan(`SELECT id FROM conversations WHERE app_id = ${app} ORDER BY updated_at DESC LIMIT 20`)).toContain('conversations_app_updated');
    expect(await plan(`SELECT id FROM conversations WHERE app_id = ${app} ORDER BY created_at DESC LIMIT 20`)).toContain('conversations_app_created');
    expect(await plan(`SELECT conversation_id FROM message_feedbacks WHERE conversation_id IN ('a', 'b')`)).toContain('message_feedbacks_conversation');
    // on a table this small PostgreSQL may pick the monitoring index (app_id, created_at, mode, status, …) for
    // these two: an ordered index range either way (no sort, no table scan), which is what is checked
    expect(await plan(`SELECT id FROM workflow_runs WHERE app_id = ${app} AND mode = 'workflow' ORDER BY created_at DESC LIMIT 20`)).toMatch(/workflow_runs_app_mode_created|workflow_runs_app_stats/);
    expect(await plan(`SELECT id FROM workflow_runs WHERE app_id = ${app} AND mode = 'workflow' AND status = 'failed' ORDER BY created_at DESC LIMIT 20`)).toMatch(/workflow_runs_app_mode_status_created|workflow_runs_app_stats/);
    expect(await plan(`SELECT seq FROM workflow_run_events WHERE run_id = 'r' AND seq > 0 ORDER BY seq LIMIT 100`)).toMatch(/workflow_run_events_pk|sqlite_autoindex_workflow_run_events/);
  });
});
