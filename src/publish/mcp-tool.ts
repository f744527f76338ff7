import type { App } from '../apps/app-service.js';
import type { InputVariable } from '../apps/input-form.js';

/** The JSON Schema of the tool's arguments. */
export interface ToolInputSchema {
  readonly type: 'object';
  readonly properties: Record<string, Record<string, unknown>>;
  readonly required: string[];
  [key: string]: unknown;
}

/** JSON Schema of one input variable, as Dify's `convert_input_form_to_parameters` (plus checkbox and JSON inputs). */
function inputProperty(v: InputVariable, description: string): Record<string, unknown> {
  const p: Record<string, unknown> = { description };
  if (v.type === 'text-input' || v.type === 'paragraph') p.type = 'string';
  else if (v.type === 'select') Object.assign(p, { type: 'string', enum: [...(v.options ?? [])] });
  else if (v.type === 'number') p.type = 'number';
  else if (v.type === 'checkbox') p.type = 'boolean';
  else if (v.type === 'json_object') p.type = 'object';
  return p;
}

/**
 * The tool's input schema, as Dify's `build_parameter_schema`: the app's input form (file inputs
 * left out: MCP arguments carry no uploads), each described by the server's `parameters`; chat
 * apps add a required `query` first.
 */
export function toolInputSchema(a: App, parameters: Readonly<Record<string, string>>): ToolInputSchema {
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const v of a.inputs) {
    if (v.type === 'file' || v.type === 'file-list') continue;
    properties[v.variable] = inputProperty(v, parameters[v.variable] ?? '');
    if (v.required) required.push(v.variable);
  }
  if (a.mode === 'completion' || a.mode === 'workflow') return { type: 'object', properties, required };
  return { type: 'object', properties: { query: { type: 'string', description: 'User Input/Question content' }, ...properties }, required: ['query', ...required] };
}

/** A tool call's arguments as the app takes them, as Dify's `prepare_tool_arguments`. */
export function toolArguments(a: App, args: Readonly<Record<string, unknown>>): { query: string; inputs: Record<string, unknown> } {
  if (a.mode === 'workflow' || a.mode === 'completion') return { query: '', inputs: { ...args } };
  const { query, ...inputs } = args;
  return { query: typeof query === 'string' ? query : query === undefined ? '' : String(query), inputs };
}

/**
 * The tool's name: the app's name (as Dify) with every character outside `A-Z a-z 0-9 _ -` made
 * `_`, at most 64 characters — the names MCP clients and model APIs accept (a space would be
 * refused by them).
 */
export function toolName(appName: string): string {
  const name = appName.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  return name || 'app';
}
