import type { EnginePorts } from '../types.js';

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
 * Dify's agent log: each entry is sent (to `send`, an agent node's `agent_log` events) when it
 * starts and again when it ends (same id), and the final entries go into the node's `json` output.
 * Without `send` the entries are only kept.
 */
export class AgentLog {
  readonly #ports: Pick<EnginePorts, 'now' | 'newId'>;
  readonly #send: (e: AgentLogEntry) => void;
  readonly #nodeId: string;
  readonly entries: AgentLogEntry[] = [];

  constructor(ports: Pick<EnginePorts, 'now' | 'newId'>, send: (e: AgentLogEntry) => void = () => undefined, nodeId = '') {
    this.#ports = ports;
    this.#send = send;
    this.#nodeId = nodeId;
  }

  start(label: string, parent: AgentLogEntry | null, data: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): AgentLogEntry {
    const e: AgentLogEntry = { id: this.#ports.newId(), parent_id: parent?.id ?? null, label, status: 'start', error: null, data, metadata: { started_at: this.#ports.now() / 1000, ...metadata } };
    this.entries.push(e);
    this.#send({ ...e, data: { ...e.data }, metadata: { ...e.metadata } });
    return e;
  }

  finish(e: AgentLogEntry, data: Record<string, unknown>, error?: string, metadata: Record<string, unknown> = {}): void {
    const now = this.#ports.now() / 1000;
    e.status = error === undefined ? 'success' : 'error';
    e.error = error ?? null;
    e.data = data;
    e.metadata = { ...e.metadata, ...metadata, finished_at: now, elapsed_time: now - Number(e.metadata.started_at ?? now) };
    this.#send({ ...e, data: { ...e.data }, metadata: { ...e.metadata } });
  }

  /** The entries as the node's `json.agent_logs`. */
  json(): Record<string, unknown>[] {
    return this.entries.map((e) => ({ id: e.id, parent_id: e.parent_id, error: e.error, status: e.status, data: e.data, label: e.label, metadata: e.metadata, node_id: this.#nodeId }));
  }
}
