import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Runtime } from '../../runtime.js';
import { notWorkflowApp } from '../../apps/errors.js';
import { validateInputs } from '../../apps/input-form.js';
import { checkRequestFiles } from '../../apps/file-upload-rules.js';
import { badRequest, notFound } from '../../infra/errors.js';
import { runNotPickedUp, workflowRunNotFound } from '../../runs/errors.js';
import type { RunRow } from '../../runs/run-service.js';
import { pauseReasons } from '../../runs/frames.js';
import { requireApp } from '../auth.js';
import { requireJson } from '../json-body.js';
import { streamRun } from '../run-stream.js';
import { callerUser, requireCaller } from '../request-user.js';
import { isUuid } from '../../infra/ids.js';

/** The runtime members these routes use (server.ts hands them nothing else). */
export type WorkflowRouteDeps = Pick<Runtime, 'config' | 'endUsers' | 'runs'>;

const RunBody = Type.Object({
  inputs: Type.Object({}, { additionalProperties: true }),
  response_mode: Type.Optional(Type.Union([Type.Literal('blocking'), Type.Literal('streaming'), Type.Null()])),
  user: Type.Optional(Type.Unknown()),
  files: Type.Optional(Type.Union([Type.Array(Type.Unknown()), Type.Null()])),
});
const StopBody = Type.Object({ user: Type.Optional(Type.Unknown()) });
const RunParams = Type.Object({ workflow_run_id: Type.String() });
const TaskParams = Type.Object({ task_id: Type.String() });


const sec = (ms: number | null) => (ms === null ? null : Math.floor(Number(ms) / 1000));

/** The `data` of a blocking response and the body of `GET /workflows/run/{id}`'s siblings. */
function blockingData(run: RunRow): Record<string, unknown> {
  return {
    id: run.id,
    workflow_id: run.app_id,
    status: run.status,
    outputs: run.outputs ? JSON.parse(run.outputs) : run.status === 'failed' ? null : {},
    error: run.error,
    elapsed_time: Number(run.elapsed_ms) / 1000,
    total_tokens: Number(run.total_tokens),
    total_steps: Number(run.total_steps),
    created_at: sec(run.created_at),
    finished_at: sec(run.finished_at),
  };
}

/**
 * `POST /workflows/run` (and `/workflows/{workflow_id}/run`, where the id is the app's one published
 * workflow), `GET /workflows/run/{id}`, `POST /workflows/tasks/{task_id}/stop`.
 */
export const workflowRoutes: FastifyPluginAsync<{ runtime: WorkflowRouteDeps }> = async (app, { runtime }) => {
  const userFromBody = callerUser(runtime, { from: 'body', user: 'required' });
  const run = async (request: FastifyRequest<{ Body: Static<typeof RunBody>; Params: { workflow_id?: string } }>, reply: FastifyReply) => {
    const a = requireApp(request);
    const user = requireCaller(request);
    if (a.mode !== 'workflow') throw notWorkflowApp();
    const workflowId = request.params.workflow_id;
    if (workflowId !== undefined) {
      if (!isUuid(workflowId)) throw badRequest(`Invalid workflow_id format: '${workflowId}'. `);
      // An app has one workflow, published under the app's id (`workflow_id` in run events).
      if (workflowId.toLowerCase() !== a.id.toLowerCase()) throw notFound(`Workflow not found with id: ${workflowId}`);
    }
    const maxFiles = runtime.config.upload.workflowFileUploadLimit;
    const inputs = validateInputs(a.inputs, request.body.inputs, maxFiles);
    checkRequestFiles(a, request.body.files, maxFiles);
    const endUser = await request.endUser();
    const started = await runtime.runs.start({ app: a, endUserId: endUser.id, user, inputs, files: request.body.files ?? [] });
    if (request.body.response_mode === 'streaming') return streamRun(reply, runtime, started.runId, { afterSeq: 0 });
    const end = await started.done;
    if (end?.notPickedUp) throw runNotPickedUp(runtime.config.runs.queueWaitSeconds);
    const row = (await runtime.runs.find(started.runId))!;
    // A run that paused answers Dify's paused blocking body: the pause reasons carry the form tokens.
    const paused = end?.status === 'paused' && row.status === 'paused' ? { paused_nodes: end.state.paused.map((r) => r.node_id), reasons: pauseReasons(end.state.paused) } : {};
    return reply.type('application/json').send({ task_id: started.taskId, workflow_run_id: row.id, data: { ...blockingData(row), ...paused } });
  };
  type RunRoute = { Body: Static<typeof RunBody>; Params: { workflow_id?: string } };
  app.post<RunRoute>('/workflows/run', { preValidation: requireJson, preHandler: userFromBody, schema: { body: RunBody } }, run);
  app.post<RunRoute>('/workflows/:workflow_id/run', { preValidation: requireJson, preHandler: userFromBody, schema: { body: RunBody } }, run);

  app.get<{ Params: Static<typeof RunParams> }>('/workflows/run/:workflow_run_id', { schema: { params: RunParams } }, async (request) => {
    const a = requireApp(request);
    if (a.mode !== 'workflow' && a.mode !== 'advanced-chat') throw notWorkflowApp();
    const run = await runtime.runs.findForApp(a.id, request.params.workflow_run_id);
    if (!run) throw workflowRunNotFound();
    return {
      id: run.id,
      workflow_id: run.app_id,
      status: run.status,
      inputs: run.inputs,
      outputs: run.outputs ? JSON.parse(run.outputs) : {},
      error: run.error,
      total_steps: Number(run.total_steps),
      total_tokens: Number(run.total_tokens),
      created_at: sec(run.created_at),
      finished_at: sec(run.finished_at),
      elapsed_time: Number(run.elapsed_ms) / 1000,
    };
  });

  app.post<{ Params: Static<typeof TaskParams>; Body: Static<typeof StopBody> }>(
    '/workflows/tasks/:task_id/stop',
    { preValidation: requireJson, preHandler: userFromBody, schema: { params: TaskParams, body: StopBody } },
    async (request) => {
      const a = requireApp(request);
      if (a.mode !== 'workflow') throw notWorkflowApp();
      await runtime.runs.stopTask(a.id, request.params.task_id);
      return { result: 'success' };
    },
  );
};
