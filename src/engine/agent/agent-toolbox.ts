import type { ToolDefinition } from '../ports.js';
import type { Tool, ToolResultMessage } from '../ports.js';
import { NodeFailure, isStop } from '../types.js';
import type { AgentContext } from './agent-context.js';
import { toolDefinition, type AgentToolSpec } from './agent-params.js';

export interface ToolCallResult {
  /** What the model is told (Dify's observation / tool message). */
  readonly observation: string;
  /** Set when the tool failed (the observation then says so, as Dify). */
  readonly error?: string;
  readonly files: readonly unknown[];
}

/**
 * A tool's messages as the text a model reads. JSON messages count only when the tool sent no
 * text (MCP tools send their structured result as text too, which would say it twice).
 */
function observationOf(messages: readonly ToolResultMessage[]): string {
  const parts: string[] = [];
  const hasText = messages.some((m) => m.type === 'text');
  for (const m of messages) {
    if (m.type === 'text') parts.push(m.text);
    else if (m.type === 'link') parts.push(`result link: ${m.url}. please tell user to check it.`);
    else if (m.type === 'json' && !hasText) parts.push(JSON.stringify(m.json));
    else if (m.type === 'file') parts.push(`image has been created and sent to user already, you do not need to create it, just tell the user to check it now.`);
    else if (m.type === 'variable') parts.push(typeof m.value === 'string' ? m.value : JSON.stringify(m.value));
  }
  return parts.join('\n');
}

/** The agent's tools, resolved once per run of the node: their definitions and their calls. */
export class AgentToolbox {
  readonly #ctx: AgentContext;
  readonly #byName = new Map<string, { spec: AgentToolSpec; tool: Tool }>();
  readonly definitions: ToolDefinition[] = [];

  private constructor(ctx: AgentContext) {
    this.#ctx = ctx;
  }

  /**
   * Resolves the agent's tools; fails naming `where` (the node, the app's setting) and the tool
   * when one of them cannot run here.
   */
  static async create(ctx: AgentContext, specs: readonly AgentToolSpec[], where: string): Promise<AgentToolbox> {
    const box = new AgentToolbox(ctx);
    const tools = ctx.ports.tools;
    if (specs.length > 0 && !tools) throw new NodeFailure(`${where}: no tools are configured on this server`, 'AgentNodeError', false);
    const found = await Promise.all(specs.map((spec) => tools!.resolve(spec.ref)));
    specs.forEach((spec, i) => {
      const f = found[i]!;
      if ('error' in f || !f.tool) throw new NodeFailure(`${where}: ${'error' in f ? f.error : `tool "${spec.ref.toolName}" cannot be found`}`, 'error' in f ? f.errorType : 'ToolNotFoundError', false);
      box.#byName.set(f.tool.name, { spec, tool: f.tool });
      box.definitions.push(toolDefinition(spec, f.tool));
    });
    return box;
  }

  providerOf(name: string): string {
    return this.#byName.get(name)?.spec.ref.providerId ?? '';
  }

  /**
   * Calls a tool the model asked for. A tool error, an unknown tool or bad arguments become the
   * observation (the model sees them and may recover, as in Dify); a stop rethrows.
   */
  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult> {
    const entry = this.#byName.get(name);
    if (!entry) return { observation: `there is not a tool named ${name}`, error: `there is not a tool named ${name}`, files: [] };
    try {
      const messages = await this.#ctx.ports.tools!.invoke(entry.tool, { ...args, ...entry.spec.fixed }, { signal, now: () => this.#ctx.ports.now() });
      return { observation: observationOf(messages), files: messages.flatMap((m) => (m.type === 'file' ? [m.file] : [])) };
    } catch (err) {
      if (isStop(err, signal)) throw err;
      const msg = (err as Error).message || String(err);
      return { observation: `tool invoke error: ${msg}`, error: msg, files: [] };
    }
  }
}

/** Arguments a model wrote (JSON text or an object) as a mapping; anything else is `{}`. */
export function parseArguments(raw: unknown): Record<string, unknown> {
  let v = raw;
  if (typeof raw === 'string') {
    try {
      v = JSON.parse(raw || '{}');
    } catch {
      return {};
    }
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
