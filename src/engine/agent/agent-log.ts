import type { NodeContext } from '../types.js';

export type AgentLogStatus = 'start' | 'success' | 'error';

/** One entry of Dify's agent log (`agent_log` stream events, `json.agent_logs` of the node). */
export interface AgentLogEntry {
  id: string;
  parent_id: string | null;
  label: string;
  status: AgentLogStatus;
  error: string | null;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/**
 * Dify's agent log: each entry is sent as an `agent_log` event when it starts and again when it
 * ends (same id), and the final entries go into the node's `json` output.
 */
export class AgentLog {
  readonly #ctx: NodeContext;
  readonly entries: AgentLogEntry[] = [];

  constructor(ctx: NodeContext) {
    this.#ctx = ctx;
  }

  start(label: string, parent: AgentLogEntry | null, data: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): AgentLogEntry {
    const e: AgentLogEntry = { id: this.#ctx.ports.newId(), parent_id: parent?.id ?? null, label, status: 'start', error: null, data, metadata: { started_at: this.#ctx.ports.now() / 1000, ...metadata } };
    this.entries.push(e);
    this.#send(e);
    return e;
  }

  finish(e: AgentLogEntry, data: Record<string, unknown>, error?: string, metadata: Record<string, unknown> = {}): void {
    const now = this.#ctx.ports.now() / 1000;
    e.status = error === undefined ? 'success' : 'error';
    e.error = error ?? null;
    e.data = data;
    e.metadata = { ...e.metadata, ...metadata, finished_at: now, elapsed_time: now - Number(e.metadata.started_at ?? now) };
    this.#send(e);
  }

  #send(e: AgentLogEntry): void {
    const ctx = this.#ctx;
    ctx.emit({
      type: 'event',
      event: 'agent_log',
      data: { node_execution_id: ctx.executionId ?? '', id: e.id, label: e.label, parent_id: e.parent_id, error: e.error, status: e.status, data: { ...e.data }, metadata: { ...e.metadata }, node_id: ctx.node.id },
    });
  }

  /** The entries as the node's `json.agent_logs`. */
  json(): Record<string, unknown>[] {
    return this.entries.map((e) => ({ id: e.id, parent_id: e.parent_id, error: e.error, status: e.status, data: e.data, label: e.label, metadata: e.metadata, node_id: this.#ctx.node.id }));
  }
}
