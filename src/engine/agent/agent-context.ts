import type { EnginePorts } from '../types.js';

/**
 * What an agent loop touches outside itself: the engine's ports and the abort signal. An agent
 * node passes its NodeContext; an agent-chat app (src/messages) passes ports of its own (without
 * the node limits, which an agent loop does not read: its iteration cap is its caller's).
 */
export interface AgentContext {
  readonly ports: Omit<EnginePorts, 'limits'>;
  readonly signal: AbortSignal;
}
