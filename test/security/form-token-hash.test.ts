import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { restartServer, startServer, type TestServer } from '../helpers/server.js';
import { dataFrames, parseSse } from '../helpers/sse.js';
import { endNode, startNode, workflowDsl } from '../helpers/workflow-dsl.js';
import { sha256 } from '../../src/infra/ids.js';

let s: TestServer;
let key = '';

const dsl = workflowDsl(
  [
    startNode([]),
    {
      id: 'review',
      type: 'human-input',
      delivery_methods: [{ type: 'webapp', enabled: true, config: {} }],
      form_content: 'Go on?',
      inputs: [],
      user_actions: [{ id: 'go', title: 'Go', button_style: 'primary' }],
      timeout: 1,
      timeout_unit: 'day',
    },
    endNode({}),
  ],
  [['start', 'review'], ['review', 'end', 'go']],
);

beforeAll(async () => {
  s = await startServer();
  key = (await s.importApp(dsl)).apiKey;
});
afterAll(async () => s?.close());

async function pausedRun(server: TestServer): Promise<{ runId: string; token: string }> {
  const r = await fetch(`${server.api}/workflows/run`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, response_mode: 'streaming', user: 'u' }) });
  const events = dataFrames(parseSse(await r.text())) as { event: string; workflow_run_id: string; data: Record<string, unknown> }[];
  return { runId: events[0]!.workflow_run_id, token: String(events.find((e) => e.event === 'human_input_required')!.data.form_token) };
}
const getForm = (server: TestServer, token: string) => fetch(`${server.api}/form/human_input/${token}`, { headers: { authorization: `Bearer ${key}` } });

describe('form tokens at rest', () => {
  it('are stored as a hash (and a sealed copy), never in plain text, and looked up by hash', async () => {
    const { runId, token } = await pausedRun(s);
    const row = await s.runtime.store.db.selectFrom('human_input_forms').selectAll().where('workflow_run_id', '=', runId).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(sha256(token));
    expect(row.token).not.toContain(token);
    expect(row.token).toMatch(/^dovetail-sealed:v1:/);
    expect((await getForm(s, token)).status).toBe(200);
    // Knowing the stored values is no use: neither the hash nor the sealed value is a token.
    expect((await getForm(s, row.token_hash!)).status).toBe(404);
    expect((await getForm(s, encodeURIComponent(row.token!))).status).toBe(404);
  });

  it('rows from before the change get their hash from migration 016 and are sealed at start; their tokens keep working', async () => {
    const { runId, token } = await pausedRun(s);
    const db = s.runtime.store.db;
    // 1. Put the row and the schema back as they were before migration 016: a plain token, no hash column.
    await db.updateTable('human_input_forms').set({ token }).where('workflow_run_id', '=', runId).execute();
    await sql`DROP INDEX human_input_forms_token_hash`.execute(db);
    await sql`ALTER TABLE human_input_forms DROP COLUMN token_hash`.execute(db);
    await sql`DELETE FROM kysely_migration WHERE name = '016-form-token-hash'`.execute(db);
    // 2. Restart: the migration hashes, the form service seals.
    s = await restartServer(s);
    const row = await s.runtime.store.db.selectFrom('human_input_forms').selectAll().where('workflow_run_id', '=', runId).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(sha256(token));
    expect(row.token).toMatch(/^dovetail-sealed:v1:/);
    expect(row.token).not.toContain(token);
    // 3. The token handed out before the upgrade still opens the form.
    expect((await getForm(s, token)).status).toBe(200);
  });
});
