import type { Kysely, Transaction } from 'kysely';
import { inBatches } from '../store/statement-batches.js';
import type { AgentCall, AgentObservation, AgentObserver } from '../engine/agent/agent-run.js';
import type { Database, MessageAgentThoughtTable } from '../store/schema.js';

/** One round of an agent-chat answer (Dify's `MessageAgentThought`), as it is built. */
export interface AgentThought {
  readonly id: string;
  readonly messageId: string;
  /** 1-based round. */
  readonly position: number;
  thought: string;
  /** Tool names of the round, `;`-separated (Dify's `tool`). */
  tool: string;
  toolLabels: Record<string, { en_US: string; zh_Hans: string }>;
  /** JSON text of tool name → arguments; '' without calls. */
  toolInput: string;
  /** JSON text of tool name → answer; '' until the tools answered. */
  observation: string;
  files: string[];
  /** Epoch ms. */
  readonly createdAt: number;
}

/** Dify keys a round's inputs and answers by tool name (a second call of one tool in a round overwrites the first). */
function byName<T>(items: readonly { readonly name: string }[], value: (i: number) => T): Record<string, T> {
  const out: Record<string, T> = {};
  items.forEach((c, i) => (out[c.name] = value(i)));
  return out;
}

/** The ids of files a tool made (Dify file mappings: `related_id`, else `id`). */
function fileIds(files: readonly unknown[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (typeof f !== 'object' || f === null) continue;
    const o = f as Record<string, unknown>;
    const id = [o.related_id, o.id].find((x): x is string => typeof x === 'string' && x !== '');
    if (id) out.push(id);
  }
  return out;
}

/**
 * Builds an answer's agent thoughts as the agent loop goes (it is the loop's observer) and reports
 * each change to `changed`: a round starts (empty thought), the model's thought and calls are
 * known, the tools answered — Dify publishes `agent_thought` at the same three points.
 */
export class AgentThoughtRecorder implements AgentObserver {
  readonly thoughts: AgentThought[] = [];
  readonly #messageId: string;
  readonly #ports: { now(): number; newId(): string };
  readonly #labels: Readonly<Record<string, string>>;
  readonly #changed: (t: AgentThought) => void;

  /** `labels`: tool name → the label the app shows (`tool_label`); the name when absent. */
  constructor(messageId: string, ports: { now(): number; newId(): string }, labels: Readonly<Record<string, string>>, changed: (t: AgentThought) => void) {
    this.#messageId = messageId;
    this.#ports = ports;
    this.#labels = labels;
    this.#changed = changed;
  }

  roundStarted(round: number): void {
    const t: AgentThought = { id: this.#ports.newId(), messageId: this.#messageId, position: round, thought: '', tool: '', toolLabels: {}, toolInput: '', observation: '', files: [], createdAt: this.#ports.now() };
    this.thoughts.push(t);
    this.#changed(t);
  }

  thought(round: number, thought: string, calls: readonly AgentCall[]): void {
    const t = this.#round(round);
    if (!t) return;
    t.thought = thought;
    t.tool = calls.map((c) => c.name).join(';');
    t.toolLabels = byName(calls, (i) => {
      const label = this.#labels[calls[i]!.name] ?? calls[i]!.name;
      return { en_US: label, zh_Hans: label };
    });
    t.toolInput = calls.length > 0 ? JSON.stringify(byName(calls, (i) => calls[i]!.args)) : '';
    this.#changed(t);
  }

  observed(round: number, results: readonly AgentObservation[]): void {
    const t = this.#round(round);
    if (!t || results.length === 0) return;
    t.observation = JSON.stringify(byName(results, (i) => results[i]!.observation));
    t.files = results.flatMap((r) => fileIds(r.files));
    this.#changed(t);
  }

  #round(round: number): AgentThought | undefined {
    return this.thoughts.find((t) => t.position === round);
  }
}

/** An `agent_thought` stream event's own fields (the route adds the message's base keys). */
export function agentThoughtEvent(t: AgentThought): Record<string, unknown> {
  return {
    id: t.id,
    position: t.position,
    thought: t.thought,
    observation: t.observation,
    tool: t.tool,
    tool_labels: t.toolLabels,
    tool_input: t.toolInput,
    message_files: t.files,
  };
}

function toRow(t: AgentThought): MessageAgentThoughtTable {
  return {
    id: t.id,
    message_id: t.messageId,
    position: t.position,
    thought: t.thought,
    tool: t.tool,
    tool_labels: JSON.stringify(t.toolLabels),
    tool_input: t.toolInput,
    observation: t.observation,
    files: JSON.stringify(t.files),
    created_at: t.createdAt,
  };
}

/** An item of `agent_thoughts` in `GET /messages` (Dify's `agent_thought_fields`). */
function listItem(r: MessageAgentThoughtTable): Record<string, unknown> {
  return {
    id: r.id,
    chain_id: null,
    message_id: r.message_id,
    position: r.position,
    thought: r.thought,
    tool: r.tool,
    tool_labels: JSON.parse(r.tool_labels) as unknown,
    tool_input: r.tool_input,
    created_at: Math.floor(Number(r.created_at) / 1000),
    observation: r.observation,
    files: JSON.parse(r.files) as unknown,
  };
}

/** The stored agent thoughts of agent-chat messages. */
export class AgentThoughtStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Stores a finished answer's thoughts (at most `max_iteration` rows, one insert). */
  async save(thoughts: readonly AgentThought[]): Promise<void> {
    if (thoughts.length === 0) return;
    await this.#db.insertInto('message_agent_thoughts').values(thoughts.map(toRow)).execute();
  }

  /** The thoughts of each of `messageIds` (one page of messages), in position order, as `GET /messages` lists them. */
  async listFor(messageIds: readonly string[]): Promise<Map<string, Record<string, unknown>[]>> {
    const out = new Map<string, Record<string, unknown>[]>();
    if (messageIds.length === 0) return out;
    const rows = await this.#db.selectFrom('message_agent_thoughts').selectAll().where('message_id', 'in', messageIds).orderBy('message_id').orderBy('position').execute();
    for (const r of rows) {
      const list = out.get(r.message_id) ?? [];
      list.push(listItem(r));
      out.set(r.message_id, list);
    }
    return out;
  }

  /** Deletes the thoughts of `messageIds` (in `tx`, with their conversation). */
  async deleteFor(messageIds: readonly string[], tx: Transaction<Database>): Promise<void> {
    for (const ids of inBatches(messageIds)) await tx.deleteFrom('message_agent_thoughts').where('message_id', 'in', ids).execute();
  }
}
