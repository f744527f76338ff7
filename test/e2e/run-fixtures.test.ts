import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT, example } from '../helpers/fixtures.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { MemoryHumanInput } from '../helpers/memory-human-input.js';

/**
 * Keep the past runnable: every stored snapshot format in test/fixtures/runs/ is loaded as a paused
 * run and resumed on the current code.
 */
const DIR = path.join(PROJECT_ROOT, 'test', 'fixtures', 'runs');
const gw = new MemoryHumanInput();
let s: TestServer;

beforeAll(async () => {
  s = await startServer({ runtime: { humanInput: gw } });
  gw.resumer = s.runtime.runs;
});
afterAll(async () => s?.close());

describe('versioned run snapshots', () => {
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.json'))) {
    it(`${file} resumes on current code`, async () => {
      const { state } = JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as { state: { v: number; pool: { start: Record<string, unknown> } } };
      const { appId } = await s.importApp(example('workflow-approval.yml'));
      const endUser = await s.runtime.endUsers.getOrCreate(appId, 'fixture-user');
      const runId = crypto.randomUUID();
      const now = Date.now();
      await s.runtime.store.db
        .insertInto('workflow_runs')
        .values({
          id: runId, app_id: appId, task_id: crypto.randomUUID(), mode: 'workflow', end_user_id: endUser.id, conversation_id: null, message_id: null,
          app_version: 1,
          status: 'paused', inputs: JSON.stringify(state.pool.start), outputs: '{}', error: null, total_steps: 2, total_tokens: 0, exceptions_count: 0,
          elapsed_ms: 5, stop_requested: 0, last_seq: 0, heartbeat_at: now, created_at: now, finished_at: null, owner_epoch: 0, owner_job: null, triggered_from: 'app-run',
        })
        .execute();
      await s.runtime.store.db.insertInto('workflow_run_snapshots').values({ run_id: runId, version: state.v, state: JSON.stringify(state), updated_at: now }).execute();
      // the form of the paused node was answered while the run was stored
      const d = await gw.decide({ runId, appId, endUserId: endUser.id, nodeId: 'review', nodeTitle: 'Review', data: { user_actions: [{ id: 'approve', title: 'Approve' }] }, resolve: () => undefined, render: (t) => t, now });
      expect(d.type).toBe('pause');
      await gw.submit(d.type === 'pause' ? d.required.form_token! : '', 'approve', { comment: 'from fixture' }, false);
      await s.runtime.runs.resume(runId);
      await s.runtime.runs.wait(runId);
      const run = (await s.runtime.runs.find(runId))!;
      expect(run.status).toBe('succeeded');
      expect(JSON.parse(run.outputs!)).toEqual({ decision: 'approved: from fixture' });
      const log = await s.runtime.store.db.selectFrom('workflow_run_events').select(['seq', 'event']).where('run_id', '=', runId).orderBy('seq').execute();
      expect(log[0]!.event).toBe('workflow_started');
      expect(log.map((e) => e.event)).toContain('human_input_form_filled');
    });
  }
});
