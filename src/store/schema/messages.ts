import type { Seq } from './runs.js';

/** Row types of conversations, their variables, messages, agent thoughts and feedback (see src/store/schema.ts). */

/** A chatflow conversation variable's current value in one conversation. */
export interface ConversationVariableTable {
  /** The variable's id in the DSL (`conversation_variables[].id`), the same in every conversation. */
  id: string;
  conversation_id: string;
  app_id: string;
  name: string;
  value_type: string;
  /** JSON. */
  value: string;
  description: string;
  created_at: number;
  updated_at: number;
}

export interface ConversationTable {
  id: string;
  app_id: string;
  end_user_id: string;
  name: string;
  /** JSON object of the inputs the conversation started with. */
  inputs: string;
  /** normal | deleted */
  status: string;
  created_at: number;
  updated_at: number;
}

/** One exchange of a completion, chat or chatflow app. */
/** One round of an agent-chat app's agent loop (Dify's `message_agent_thoughts`); JSON columns are text. */
export interface MessageAgentThoughtTable {
  id: string;
  message_id: string;
  /** 1-based round. */
  position: number;
  thought: string;
  /** Tool names of the round, `;`-separated. */
  tool: string;
  /** JSON: tool name → label. */
  tool_labels: string;
  /** JSON text: tool name → arguments ('' when no tool was called). */
  tool_input: string;
  /** JSON text: tool name → answer ('' before / without tool calls). */
  observation: string;
  /** JSON: file ids. */
  files: string;
  created_at: number;
}

export interface MessageTable {
  id: string;
  app_id: string;
  /** null for completion apps. */
  conversation_id: string | null;
  end_user_id: string;
  task_id: string;
  /** Set for chatflow (advanced-chat) messages. */
  workflow_run_id: string | null;
  /** completion | chat | advanced-chat */
  mode: string;
  /** JSON object. */
  inputs: string;
  query: string;
  answer: string;
  /** JSON array of file references sent with the message. */
  files: string;
  prompt_tokens: number;
  completion_tokens: number;
  /** JSON of the full `metadata.usage` object. */
  usage: string;
  /** Decimal string. */
  total_price: string;
  currency: string;
  /** Seconds. */
  latency: number;
  /** normal | error | stopped | running */
  status: string;
  error: string | null;
  /** api | console */
  from_source: string;
  created_at: number;
  updated_at: number;
  /** The annotation that answered this message (annotation reply), else null. */
  annotation_id: string | null;
  /** While `running`: when the generating process last said it was alive, epoch ms (0 before migration 021). */
  heartbeat_at: number;
}

/** A like/dislike on a message: one per message from its end user, one from admins. */
export interface MessageFeedbackTable {
  /** Insert order; paging snapshots cut on it. */
  seq: Seq;
  id: string;
  app_id: string;
  conversation_id: string | null;
  message_id: string;
  /** like | dislike */
  rating: string;
  content: string | null;
  /** user | admin */
  from_source: string;
  from_end_user_id: string | null;
  from_account_id: string | null;
  created_at: number;
  updated_at: number;
}

/** The newest feedback `seq` a key's reader saw on page 1, per page size. */
export interface FeedbackPageSnapshotTable {
  api_key_id: string;
  page_limit: number;
  max_seq: number;
  created_at: number;
}

/** A conversation an end user pinned in the web app (Dify's `pinned_conversations`). */
export interface PinnedConversationTable {
  app_id: string;
  end_user_id: string;
  conversation_id: string;
  created_at: number;
}

/** A completion answer an end user saved in the web app (Dify's `saved_messages`). */
export interface SavedMessageTable {
  id: string;
  app_id: string;
  end_user_id: string;
  message_id: string;
  created_at: number;
}
