import type { App } from '../../apps/app-service.js';
import type { InputVariable } from '../../apps/input-form.js';
import { pyJsonDumps } from '../../lib/python-json.js';
import { isObject } from '../../infra/objects.js';
import { ToolError, type Tool, type ToolCaller, type ToolMessage, type ToolParameter, type ToolParameterType, type ToolRef, type ToolResolution } from '../tool.js';

/** How a workflow tool's run ended (the run service's `RunEnd`, reduced). */
export interface WorkflowToolRunEnd {
  readonly status: string;
  readonly outputs: Readonly<Record<string, unknown>>;
  readonly error: string | null;
}

/** What workflow tools ask of the rest of the server. */
export interface WorkflowToolDeps {
  /** The app with this id, any mode; undefined when there is none. */
  findApp(id: string): Promise<App | undefined>;
  /**
   * Runs `app` with `inputs` (checked against its input form; a bad one throws naming the
   * variable) as a run of `caller`'s end user, `callDepth` deep; stops it when `signal` aborts.
   */
  run(app: App, inputs: Record<string, unknown>, caller: ToolCaller, callDepth: number, signal: AbortSignal): Promise<WorkflowToolRunEnd>;
  /** `WORKFLOW_CALL_MAX_DEPTH`: how deep workflow tools may nest (Dify's default 5). */
  readonly maxDepth: number;
}

const PARAMETER_TYPES: Readonly<Record<InputVariable['type'], ToolParameterType>> = {
  'text-input': 'string',
  paragraph: 'string',
  select: 'select',
  number: 'number',
  checkbox: 'boolean',
  json_object: 'object',
  file: 'file',
  'file-list': 'files',
};

/** A workflow app's input variables as tool parameters (all `llm`, as Dify's workflow tools default them). */
export function workflowToolParameters(app: App): ToolParameter[] {
  return app.inputs.map((v) => ({
    name: v.variable,
    type: PARAMETER_TYPES[v.type],
    form: 'llm',
    required: v.required,
    ...(v.default !== undefined && v.default !== '' ? { default: v.default } : {}),
    ...(v.options ? { options: v.options } : {}),
    llmDescription: v.label || v.variable,
  }));
}

const isFile = (v: unknown) => isObject(v) && v.dify_model_identity === '__dify__file__';

/** The file mappings among a run's outputs (a value, or items of a list), in output order. */
function filesOf(outputs: Readonly<Record<string, unknown>>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const v of Object.values(outputs)) {
    if (isFile(v)) out.push(v as Record<string, unknown>);
    else if (Array.isArray(v)) for (const item of v) if (isFile(item)) out.push(item as Record<string, unknown>);
  }
  return out;
}

/** Dify's WorkflowTool messages: each output file, then the outputs as JSON text and as json. */
export function workflowToolMessages(outputs: Readonly<Record<string, unknown>>): ToolMessage[] {
  return [
    ...filesOf(outputs).map((file): ToolMessage => ({ type: 'file', file })),
    { type: 'text', text: pyJsonDumps(outputs, false) },
    { type: 'json', json: outputs },
  ];
}

/**
 * Workflow as tool (`provider_type: workflow`): the provider id names a workflow app of this
 * server (exports name a provider of another workspace; `app import --tool OLD=APP_ID` rewrites
 * it), which runs in process with the tool's inputs as a run of the calling end user.
 */
export class WorkflowTools {
  constructor(readonly deps: WorkflowToolDeps) {}

  /** Why `ref` cannot run here, or the tool. */
  async resolve(ref: ToolRef): Promise<ToolResolution> {
    const app = await this.deps.findApp(ref.providerId);
    if (!app || app.mode !== 'workflow') {
      const what = app ? `app ${app.id} is a ${app.mode} app, not a workflow app` : `no workflow app of this server has the id "${ref.providerId}" (a workflow tool of another workspace)`;
      return {
        error: `workflow tool "${ref.toolName}" (provider id ${ref.providerId}): ${what}; map it with dovetail app import FILE --tool ${ref.providerId}=APP_ID (or app update APP FILE --tool ${ref.providerId}=APP_ID; dovetail app tools lists the workflow apps)`,
        errorType: 'ToolProviderNotFoundError',
        setting: `--tool ${ref.providerId}=APP_ID`,
      };
    }
    return { tool: this.#tool(app, ref.toolName || app.name) };
  }

  #tool(app: App, name: string): Tool {
    const deps = this.deps;
    return {
      name,
      description: app.description || app.name,
      parameters: workflowToolParameters(app),
      async invoke(params, ctx) {
        const caller = ctx.caller;
        if (!caller) throw new ToolError(`workflow tool "${name}": it runs only inside a run (it runs as the calling end user)`);
        const depth = caller.callDepth + 1;
        if (depth > deps.maxDepth) {
          throw new ToolError(`workflow tool "${name}" (app ${app.id}): Max workflow call depth ${deps.maxDepth} reached (WORKFLOW_CALL_MAX_DEPTH); a workflow calls itself through its tools?`, 'ToolInvokeError');
        }
        const inputs: Record<string, unknown> = {};
        for (const p of workflowToolParameters(app)) if (params[p.name] !== undefined) inputs[p.name] = params[p.name];
        const end = await deps.run(app, inputs, caller, depth, ctx.signal);
        if (end.status !== 'succeeded' && end.status !== 'partial-succeeded') {
          throw new ToolError(`workflow tool "${name}" (app ${app.id}): the workflow run ${end.status}${end.error ? `: ${end.error}` : ''}`);
        }
        return workflowToolMessages(end.outputs);
      },
    };
  }
}
