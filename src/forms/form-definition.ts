import type { HumanInputContext, HumanInputRequired } from './human-input-port.js';
import { objectOf } from '../infra/objects.js';

export const FORM_INPUT_TYPES = ['paragraph', 'select', 'file', 'file-list'] as const;
export type FormInputType = (typeof FORM_INPUT_TYPES)[number];

/** One form field, as the node declares it (unknown keys are kept for the wire). */
export interface FormInput {
  readonly type: FormInputType;
  readonly output_variable_name: string;
  readonly default?: { readonly type?: string; readonly selector?: readonly string[]; readonly value?: unknown };
  readonly option_source?: { readonly type?: string; readonly selector?: readonly string[]; readonly value?: readonly string[] };
  readonly options?: readonly string[];
  readonly allowed_file_types?: readonly string[];
  readonly allowed_file_extensions?: readonly string[];
  readonly allowed_file_upload_methods?: readonly string[];
  readonly number_limits?: number;
  readonly [k: string]: unknown;
}

export interface FormAction {
  readonly id: string;
  readonly title: string;
  readonly button_style: string;
}

export interface DeliveryMethod {
  readonly id: string;
  readonly type: 'webapp' | 'email';
  readonly enabled: boolean;
  readonly config: Readonly<Record<string, unknown>>;
}

/** Everything a stored form needs, fixed when the run reaches the node. */
export interface FormDefinition {
  readonly nodeTitle: string;
  /** Markdown with workflow variables filled in; `{{#$output.x#}}` placeholders left as they are. */
  readonly formContent: string;
  readonly inputs: readonly FormInput[];
  readonly actions: readonly FormAction[];
  readonly resolvedDefaults: Readonly<Record<string, string>>;
  readonly deliveryMethods: readonly DeliveryMethod[];
  readonly displayInUi: boolean;
}

const UNIT_MS = { hour: 3_600_000, day: 86_400_000, minute: 60_000 } as const;

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) ? v.map(String) : undefined;
}

/** Dify stringifies defaults on the wire: null → "", objects → JSON, others → text. */
export function stringifyDefault(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** The node's timeout in ms (Dify backend defaults: 36 hours). */
export function timeoutMs(data: Readonly<Record<string, unknown>>): number {
  const n = typeof data.timeout === 'number' && data.timeout > 0 ? data.timeout : 36;
  const unit = data.timeout_unit === 'day' ? 'day' : data.timeout_unit === 'minute' ? 'minute' : 'hour';
  return n * UNIT_MS[unit];
}

/** Whether a Human Input node's data has an enabled email delivery (start-up warns about mail only then). */
export function sendsEmail(data: Readonly<Record<string, unknown>>): boolean {
  return deliveryMethods(data).some((m) => m.type === 'email' && m.enabled);
}

function deliveryMethods(data: Readonly<Record<string, unknown>>): DeliveryMethod[] {
  if (!Array.isArray(data.delivery_methods)) return [{ id: 'webapp', type: 'webapp', enabled: true, config: {} }];
  return data.delivery_methods.map(objectOf).flatMap((m, i) =>
    m.type === 'webapp' || m.type === 'email'
      ? [{ id: typeof m.id === 'string' ? m.id : `delivery-${i}`, type: m.type, enabled: m.enabled !== false, config: objectOf(m.config) }]
      : [],
  );
}

/** Builds the form for a node from its DSL data and the run's variables. */
export function buildDefinition(ctx: HumanInputContext): FormDefinition {
  const data = ctx.data;
  const inputs: FormInput[] = (Array.isArray(data.inputs) ? data.inputs : []).map(objectOf).map((raw) => {
    const input = { ...raw, type: String(raw.type) as FormInputType, output_variable_name: String(raw.output_variable_name ?? '') };
    if (input.type === 'select') {
      const src = objectOf(raw.option_source);
      const options = src.type === 'variable' ? strings(ctx.resolve(strings(src.selector) ?? [])) ?? [] : strings(src.value) ?? strings(raw.options) ?? [];
      return { ...input, options };
    }
    return input;
  });
  const resolvedDefaults: Record<string, string> = {};
  for (const input of inputs) {
    const d = objectOf(input.default);
    if (d.type === 'variable') resolvedDefaults[input.output_variable_name] = stringifyDefault(ctx.resolve(strings(d.selector) ?? []));
    else if (d.type === 'constant' && d.value !== undefined && d.value !== '') resolvedDefaults[input.output_variable_name] = stringifyDefault(d.value);
  }
  const actions: FormAction[] = (Array.isArray(data.user_actions) ? data.user_actions : []).map(objectOf).map((a) => ({
    id: String(a.id ?? ''),
    title: String(a.title ?? a.id ?? ''),
    button_style: typeof a.button_style === 'string' ? a.button_style : 'default',
  }));
  const methods = deliveryMethods(data);
  const webapp = methods.some((m) => m.type === 'webapp' && m.enabled);
  return {
    nodeTitle: ctx.nodeTitle,
    formContent: ctx.render(typeof data.form_content === 'string' ? data.form_content : ''),
    inputs,
    actions,
    resolvedDefaults,
    deliveryMethods: methods.filter((m) => m.enabled),
    displayInUi: webapp,
  };
}

/** True when the form can be reached through the API (web-app delivery enabled). */
export function hasWebappDelivery(def: FormDefinition): boolean {
  return def.deliveryMethods.some((m) => m.type === 'webapp');
}

/** The `human_input_required` payload of a stored form. */
export function requiredPayload(
  formId: string,
  nodeId: string,
  def: FormDefinition,
  token: string | null,
  expirationMs: number,
): HumanInputRequired {
  return {
    form_id: formId,
    node_id: nodeId,
    node_title: def.nodeTitle,
    form_content: def.formContent,
    inputs: def.inputs,
    actions: def.actions,
    display_in_ui: def.displayInUi,
    form_token: token,
    resolved_default_values: def.resolvedDefaults,
    expiration_time: Math.floor(expirationMs / 1000),
  };
}

const OUTPUT_REF = /\{\{#\$output\.([A-Za-z_][A-Za-z0-9_]{0,29})#\}\}/g;

function renderValue(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.every((x) => typeof x === 'object' && x !== null && 'transfer_method' in x) ? `[${v.length} files]` : JSON.stringify(v);
  if (typeof v === 'object') return 'transfer_method' in (v as object) ? '[file]' : JSON.stringify(v);
  return String(v);
}

/** `__rendered_content`: the form content with each `{{#$output.x#}}` replaced by the submitted value. */
export function renderSubmitted(content: string, values: Readonly<Record<string, unknown>>): string {
  return content.replace(OUTPUT_REF, (_m, name: string) => renderValue(values[name]));
}
