import type { EnginePorts } from '../types.js';

/**
 * What an agent loop touches outside itself: the engine's ports and the abort signal. An agent
 * node passes its NodeContext; an agent-chat app (src/messages) passes ports of its own.
 */
export interface AgentContext {
  readonly ports: EnginePorts;
  readonly signal: AbortSignal;
}
