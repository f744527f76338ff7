import type { ChatMessage } from '../ports.js';
import type { ModelSpec } from '../nodes/model-call.js';
import type { AgentContext } from './agent-context.js';
import type { AgentLog } from './agent-log.js';
import type { AgentToolbox } from './agent-toolbox.js';

export type { AgentContext } from './agent-context.js';


/** A tool call the model asked for in a round, its arguments parsed. */
export interface AgentCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** What a tool call of a round gave back. */
export interface AgentObservation extends AgentCall {
  readonly observation: string;
  /** Set when the tool failed (the observation says so too). */
  readonly error?: string;
  readonly files: readonly unknown[];
}

/**
 * Follows a run round by round (Dify's agent thoughts of agent-chat apps): a round starts, the
 * model's thought and the calls it asked for are known, then the tools' answers.
 */
export interface AgentObserver {
  roundStarted?(round: number): void;
  thought?(round: number, thought: string, calls: readonly AgentCall[]): void;
  observed?(round: number, results: readonly AgentObservation[]): void;
}

/** What one agent run needs, whatever the strategy. */
export interface AgentRunInput {
  readonly ctx: AgentContext;
  readonly model: ModelSpec;
  readonly toolbox: AgentToolbox;
  readonly log: AgentLog;
  readonly instruction: string;
  readonly history: readonly ChatMessage[];
  readonly query: string;
  readonly maxIterations: number;
  /** Streams answer text as it arrives (the node's `text`). */
  readonly onText: (text: string) => void;
  readonly observer?: AgentObserver;
}

export interface AgentRunResult {
  readonly text: string;
  readonly files: unknown[];
  readonly promptTokens: number;
  readonly completionTokens: number;
}
