import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notWorkflowApp } from '../../apps/errors.js';
import { workflowRunEventsNotFound } from '../../runs/errors.js';
import { finishedFrame } from '../../runs/run-service.js';
import { openSse } from '../sse.js';
import { streamRun } from '../run-stream.js';
import { requireApp } from '../auth.js';
import { callerUser, requireCaller } from '../request-user.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WorkflowEventRouteDeps = Pick<Runtime, 'config' | 'endUsers' | 'runs'>;

const Params = Type.Object({ workflow_run_id: Type.String() });
const Query = Type.Object({
  user: Type.Optional(Type.String()),
  include_state_snapshot: Type.Optional(Type.String()),
  continue_on_pause: Type.Optional(Type.String()),
});

/** Dify's flag parsing: true only for the literal `true` (any case). */
const flag = (v: string | undefined) => (v ?? '').toLowerCase() === 'true';

/** `GET /workflow/{workflow_run_id}/events`: reopen a run's stream (reference 2.9). */
export const workflowEventRoutes: FastifyPluginAsync<{ runtime: WorkflowEventRouteDeps }> = async (app, { runtime }) => {
  app.get<{ Params: Static<typeof Params>; Querystring: Static<typeof Query> }>(
    '/workflow/:workflow_run_id/events',
    { preHandler: callerUser(runtime, { from: 'query', user: 'required' }), schema: { params: Params, querystring: Query } },
    async (request, reply) => {
      const a = requireApp(request);
      const user = requireCaller(request);
      if (a.mode !== 'workflow' && a.mode !== 'advanced-chat') throw notWorkflowApp();
      const endUser = await request.endUser();
      const run = await runtime.runs.findForApp(a.id, request.params.workflow_run_id);
      if (!run || run.end_user_id !== endUser.id) throw workflowRunEventsNotFound();
      if (run.finished_at !== null) {
        const sse = openSse(reply);
        sse.send({ ...finishedFrame(run, user, run.app_id), task_id: run.id });
        sse.end();
        return;
      }
      const withSnapshot = flag(request.query.include_state_snapshot);
      const afterSeq = withSnapshot ? 0 : await runtime.runs.lastPauseSeq(run.id);
      await streamRun(reply, runtime, run.id, {
        afterSeq,
        continueOnPause: flag(request.query.continue_on_pause),
        // a pause already in the log is the current one only while the run is still paused
        replayUntil: run.status === 'paused' ? Number(run.last_seq) : Number(run.last_seq) + 1,
      });
    },
  );
};
