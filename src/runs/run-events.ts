/**
 * The events of a workflow or chatflow run, by Dify's names: the `event` of each frame a run
 * writes to its log (`workflow_run_events.event`) and its streams send. One list, so that every
 * module spells a name the same way and a new one is added here first
 * (test/unit/run-events.test.ts checks the names written anywhere in src/ against it).
 */
export const RUN_EVENTS = [
  'workflow_started',
  'node_started',
  'node_retry',
  'node_finished',
  'iteration_started',
  'iteration_next',
  'iteration_completed',
  'loop_started',
  'loop_next',
  'loop_completed',
  'agent_log',
  'text_chunk',
  'message',
  'message_replace',
  'message_end',
  'human_input_required',
  'human_input_form_filled',
  'human_input_form_timeout',
  'workflow_paused',
  'workflow_finished',
  'error',
] as const;

export type RunEventName = (typeof RUN_EVENTS)[number];

/** The events that end an execution of a run: it finished (whatever its status), or it waits for a form. */
export const TERMINAL_RUN_EVENTS = ['workflow_finished', 'workflow_paused'] as const satisfies readonly RunEventName[];

export type TerminalRunEvent = (typeof TERMINAL_RUN_EVENTS)[number];

/**
 * Whether an event ends an execution of a run (`workflow_finished` or `workflow_paused`). A waiter
 * for a run's end, `dovetail run events --follow` and a run stream stop there (a stream with its
 * own exceptions: src/http/run-stream.ts).
 */
export function isTerminal(event: unknown): event is TerminalRunEvent {
  return (TERMINAL_RUN_EVENTS as readonly unknown[]).includes(event);
}

/** Whether `event` is a run event name (a frame read back from the log, say). */
export function isRunEvent(event: unknown): event is RunEventName {
  return (RUN_EVENTS as readonly unknown[]).includes(event);
}
