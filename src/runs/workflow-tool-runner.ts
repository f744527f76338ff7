import type { App } from '../apps/app-service.js';
import { validateInputs } from '../apps/input-form.js';
import { ToolError, type ToolCaller } from '../tools/tool.js';
import type { WorkflowToolRunEnd } from '../tools/workflow/workflow-tools.js';
import type { RunService } from './run-service.js';

/**
 * Runs a workflow app for a workflow tool: its inputs checked as the API checks them, a run of
 * the caller's end user (it shows in the app's logs like any other), stopped when the caller
 * stops. A run that pauses (Human Input) is stopped: a tool call cannot wait for a form.
 */
export async function runWorkflowForTool(runs: RunService, app: App, raw: Record<string, unknown>, caller: ToolCaller, callDepth: number, signal: AbortSignal): Promise<WorkflowToolRunEnd> {
  let inputs: Record<string, unknown>;
  try {
    // the calling run's values, not a request's: no request file bound
    inputs = validateInputs(app.inputs, raw, Number.POSITIVE_INFINITY);
  } catch (err) {
    throw new ToolError(`workflow tool (app ${app.id}): ${(err as Error).message}`, 'ToolParameterError');
  }
  const started = await runs.start({ app, endUserId: caller.endUserId, user: caller.user, inputs, callDepth });
  const stop = () => void runs.stopTask(app.id, started.taskId, { reason: 'The calling run stopped.' }).catch(() => undefined);
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  try {
    const end = await started.done;
    if (!end) return { status: 'failed', outputs: {}, error: 'internal error (see the server log)' };
    if (end.status === 'paused') {
      await runs.stopTask(app.id, started.taskId, { reason: 'A workflow tool cannot wait for human input.' });
      return { status: 'paused', outputs: {}, error: 'it paused for human input, which a tool call cannot wait for' };
    }
    return { status: end.status, outputs: end.outputs, error: end.error };
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
