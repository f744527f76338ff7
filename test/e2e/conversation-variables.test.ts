import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startServer, type TestServer } from '../helpers/server.js';
import { workflowDsl, startNode } from '../helpers/workflow-dsl.js';
import { validateResponse } from '../helpers/openapi.js';

/** A chatflow that counts its turns in a conversation variable and answers the count. */
function counterApp(): string {
  const doc = parse(
    workflowDsl(
      [
        startNode(),
        { id: 'bump', type: 'assigner', version: '2', items: [{ variable_selector: ['conversation', 'count'], input_type: 'constant', operation: '+=', value: 1 }] },
        { id: 'answer', type: 'answer', answer: 'count is {{#conversation.count#}}, note {{#conversation.note#}}' },
      ],
      [
        ['start', 'bump'],
        ['bump', 'answer'],
      ],
      { mode: 'advanced-chat', name: 'counter' },
    ),
  ) as { workflow: Record<string, unknown> };
  doc.workflow.conversation_variables = [
    { id: '11111111-1111-4111-8111-111111111111', name: 'count', value_type: 'number', value: 0, description: 'turns so far', selector: ['conversation', 'count'] },
    { id: '22222222-2222-4222-8222-222222222222', name: 'note', value_type: 'string', value: 'none', description: '', selector: ['conversation', 'note'] },
  ];
  return stringify(doc);
}

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startServer();
  ({ apiKey: key } = await s.importApp(counterApp()));
});
afterAll(async () => s?.close());

const h = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const chat = async (query: string, conversation_id?: string, user = 'cv') =>
  (await fetch(`${s.api}/chat-messages`, { method: 'POST', headers: h(), body: JSON.stringify({ inputs: {}, query, user, conversation_id, response_mode: 'blocking' }) })).json();
const vars = async (conv: string, q = '', user = 'cv') => {
  const r = await fetch(`${s.api}/conversations/${conv}/variables?user=${user}${q}`, { headers: h() });
  return { status: r.status, body: await r.json() };
};
const put = async (conv: string, id: string, body: unknown) => {
  const r = await fetch(`${s.api}/conversations/${conv}/variables/${id}`, { method: 'PUT', headers: h(), body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};

describe('chatflow conversation variables', () => {
  it('carry from turn to turn, are listed, and an update reaches the next turn', async () => {
    const first = await chat('one');
    expect(first.answer).toBe('count is 1, note none');
    const second = await chat('two', first.conversation_id);
    expect(second.answer).toBe('count is 2, note none');
    // Another conversation starts from the defaults.
    expect((await chat('fresh')).answer).toBe('count is 1, note none');

    const list = await vars(first.conversation_id);
    expect(list.status).toBe(200);
    validateResponse('/conversations/{conversation_id}/variables', 'get', 200, list.body);
    expect(list.body).toMatchObject({ limit: 20, has_more: false });
    expect(list.body.data.map((v: { name: string; value: string; value_type: string }) => [v.name, v.value, v.value_type])).toEqual([
      ['count', '2', 'number'],
      ['note', 'none', 'string'],
    ]);

    const upd = await put(first.conversation_id, '11111111-1111-4111-8111-111111111111', { value: 10, user: 'cv' });
    expect(upd.status).toBe(200);
    validateResponse('/conversations/{conversation_id}/variables/{variable_id}', 'put', 200, upd.body);
    expect(upd.body).toMatchObject({ name: 'count', value: '10', description: 'turns so far' });
    await put(first.conversation_id, '22222222-2222-4222-8222-222222222222', { value: 'kept', user: 'cv' });
    expect((await chat('three', first.conversation_id)).answer).toBe('count is 11, note kept');
  });

  it('pages with last_id, filters by name, and refuses what does not fit', async () => {
    const c = await chat('x');
    const p1 = await vars(c.conversation_id, '&limit=1');
    expect(p1.body).toMatchObject({ limit: 1, has_more: true });
    const p2 = await vars(c.conversation_id, `&limit=1&last_id=${p1.body.data[0].id}`);
    expect(p2.body).toMatchObject({ has_more: false });
    expect([p1.body.data[0].name, p2.body.data[0].name].sort()).toEqual(['count', 'note']);
    expect((await vars(c.conversation_id, '&variable_name=note')).body.data.map((v: { name: string }) => v.name)).toEqual(['note']);
    expect((await vars(c.conversation_id, '&last_id=nope')).status).toBe(400);

    const mismatch = await put(c.conversation_id, '11111111-1111-4111-8111-111111111111', { value: 'ten', user: 'cv' });
    expect(mismatch).toEqual({ status: 400, body: { code: 'bad_request', message: "Type mismatch: variable 'count' expects number, but got string type", status: 400 } });
    const unknown = await put(c.conversation_id, '33333333-3333-4333-8333-333333333333', { value: 1, user: 'cv' });
    expect(unknown).toEqual({ status: 404, body: { code: 'not_found', message: 'Conversation Variable Not Exists.', status: 404 } });
    const noValue = await put(c.conversation_id, '11111111-1111-4111-8111-111111111111', { user: 'cv' });
    expect(noValue.status).toBe(400);
    expect(noValue.body.message).toMatch(/value/);
    // Someone else's conversation is not found.
    expect((await vars(c.conversation_id, '', 'intruder')).status).toBe(404);
  });

  it('an update without value is refused by the schema, naming the field', async () => {
    const c = await chat('y');
    const r = await put(c.conversation_id, '11111111-1111-4111-8111-111111111111', { user: 'cv' });
    expect(r).toEqual({ status: 400, body: { code: 'invalid_param', message: 'value is required', status: 400 } });
  });
});
