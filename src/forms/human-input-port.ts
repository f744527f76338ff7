import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.js';
/**
 * The boundary between the engine's `human-input` node (src/engine/nodes/human-input.ts, built
 * with the workflow runtime) and the form store (src/forms, built with the Human Input issue).
 *
 * Like Dify's HITL callback: the node never stores anything. Each time it runs it asks the gateway
 * for a decision. The first time there is no form, so the gateway creates one and answers `pause`;
 * the run pauses with the node re-queued. When the form is later submitted (or times out) the
 * gateway rings the `RunResumer`; the resumed run re-runs the node, which asks again and now gets
 * `completed` or `timeout` with the outputs and the handle to follow. No node runs twice otherwise.
 */

/** What the node hands the gateway: its DSL data and read access to the run's variables. */
export interface HumanInputContext {
  readonly runId: string;
  readonly appId: string;
  readonly endUserId: string;
  readonly nodeId: string;
  readonly nodeTitle: string;
  /** The node's raw DSL `data` block (delivery_methods, form_content, inputs, user_actions, timeout, timeout_unit). */
  readonly data: Readonly<Record<string, unknown>>;
  /** Reads a value from the run's variable pool by selector (`['node_id', 'var', …]`); undefined when absent. */
  resolve(selector: readonly string[]): unknown;
  /** Renders `{{#node.var#}}` references against the variable pool (leaves `{{#$output.x#}}` untouched). */
  render(template: string): string;
  /** Epoch ms now (the engine's clock). */
  readonly now: number;
}

/** The `data` of a `human_input_required` event (reference 3.2), also used for `workflow_paused.reasons`. */
export interface HumanInputRequired {
  readonly form_id: string;
  readonly node_id: string;
  readonly node_title: string;
  readonly form_content: string;
  readonly inputs: readonly Record<string, unknown>[];
  readonly actions: readonly { id: string; title: string; button_style: string }[];
  readonly display_in_ui: boolean;
  readonly form_token: string | null;
  readonly resolved_default_values: Readonly<Record<string, string>>;
  /** Epoch seconds. */
  readonly expiration_time: number;
}

export type HumanInputDecision =
  /** No submission yet: pause the run; emit `human_input_required` with `required`. */
  | { readonly type: 'pause'; readonly required: HumanInputRequired }
  /** Submitted: emit `human_input_form_filled` with `filled`, finish the node with `outputs`, follow `handle` (the action id). */
  | {
      readonly type: 'completed';
      readonly handle: string;
      readonly inputs: Readonly<Record<string, unknown>>;
      readonly outputs: Readonly<Record<string, unknown>>;
      readonly filled: {
        readonly node_id: string;
        readonly node_title: string;
        readonly rendered_content: string;
        readonly action_id: string;
        readonly action_text: string;
        readonly submitted_data: Readonly<Record<string, unknown>>;
      };
    }
  /** Node-level timeout: emit `human_input_form_timeout` with `timeout`, finish with `outputs`, follow `__timeout`. */
  | {
      readonly type: 'timeout';
      readonly handle: '__timeout';
      readonly outputs: Readonly<Record<string, unknown>>;
      readonly timeout: { readonly node_id: string; readonly node_title: string; readonly expiration_time: number };
    };

/** Implemented by src/forms; given to the engine as a port. */
export interface HumanInputGateway {
  decide(ctx: HumanInputContext): Promise<HumanInputDecision>;
  /** Closes every open form of a run (the run was stopped or ended). */
  closeForms(runId: string): Promise<void>;
}

/** Implemented by src/runs; the form store calls it after a successful submit or a timeout. */
export interface RunResumer {
  /**
   * Resumes a paused run (idempotent: compare-and-set `paused → running`; a run that is not paused
   * is left alone). Returns once the resume has been accepted, not when the run finishes. With
   * `tx`, the resume is written in the caller's transaction (the form submission's), so the decision
   * and the resume commit together; the caller wakes the queue after the commit.
   */
  resume(runId: string, tx?: Transaction<Database>): Promise<void>;
  /** Stops a paused run for good (global timeout): it ends `stopped`. */
  stop(runId: string, reason: string): Promise<void>;
}

export { TIMEOUT_HANDLE } from '../lib/human-input-handles.js';
