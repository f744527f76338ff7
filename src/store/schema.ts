import type { Generated } from 'kysely';

/**
 * Row types of every table. Timestamps are epoch milliseconds (integer / bigint), booleans are
 * 0/1 integers and JSON columns are text, so one migration set serves SQLite and PostgreSQL.
 */
export interface Database {
  server_secrets: ServerSecretTable;
  workspaces: WorkspaceTable;
  apps: AppTable;
  app_versions: AppVersionTable;
  api_keys: ApiKeyTable;
  end_users: EndUserTable;
  upload_files: UploadFileTable;
  conversations: ConversationTable;
  messages: MessageTable;
  message_agent_thoughts: MessageAgentThoughtTable;
  workflow_runs: WorkflowRunTable;
  workflow_run_events: WorkflowRunEventTable;
  workflow_run_snapshots: WorkflowRunSnapshotTable;
  message_feedbacks: MessageFeedbackTable;
  accounts: AccountTable;
  feedback_page_snapshots: FeedbackPageSnapshotTable;
  human_input_forms: HumanInputFormTable;
  human_input_deliveries: HumanInputDeliveryTable;
  human_input_form_recipients: HumanInputFormRecipientTable;
  jobs: JobTable;
  job_outbox: JobOutboxTable;
  datasets: DatasetTable;
  documents: DocumentTable;
  indexing_runs: IndexingRunTable;
  segments: SegmentTable;
  parent_chunks: ParentChunkTable;
  segment_embeddings: SegmentEmbeddingTable;
  conversation_variables: ConversationVariableTable;
  app_annotations: AppAnnotationTable;
  app_annotation_settings: AppAnnotationSettingTable;
  annotation_embeddings: AnnotationEmbeddingTable;
  annotation_hit_histories: AnnotationHitHistoryTable;
  annotation_jobs: AnnotationJobTable;
  tags: TagTable;
  tag_bindings: TagBindingTable;
  dataset_metadata: DatasetMetadataTable;
  document_metadata_values: DocumentMetadataValueTable;
}

export interface WorkspaceTable {
  id: string;
  name: string;
  created_at: number;
}

export interface AppTable {
  id: string;
  workspace_id: string;
  name: string;
  /** completion | chat | advanced-chat | workflow */
  mode: string;
  description: string;
  icon: string;
  /** Parsed DSL document as JSON text. */
  dsl: string;
  enable_api: number;
  status: string;
  /** Per-app concurrent request limit; null = the instance default. */
  max_active_requests: number | null;
  created_at: number;
  updated_at: number;
  /** The graph version `dsl` is (1 at import; `app update` adds one). */
  version: number;
}

/** Every version of an app's DSL; runs resume on the version they started with. */
export interface AppVersionTable {
  app_id: string;
  version: number;
  /** Parsed DSL document as JSON text. */
  dsl: string;
  created_at: number;
}

export interface ApiKeyTable {
  id: string;
  /** app | dataset */
  type: string;
  app_id: string | null;
  workspace_id: string;
  /** SHA-256 hex of the whole key; the key itself is never stored. */
  token_hash: string;
  /** First characters of the key, for `key list`. */
  hint: string;
  created_at: number;
  last_used_at: number | null;
}

export interface EndUserTable {
  id: string;
  app_id: string;
  /** The caller's `user` string. */
  session_id: string;
  created_at: number;
}

export interface UploadFileTable {
  id: string;
  workspace_id: string;
  app_id: string | null;
  name: string;
  size: number;
  extension: string;
  mime_type: string;
  blob_key: string;
  /** End-user id (or account name for CLI/dataset uploads). */
  created_by: string;
  /** end_user | account */
  created_by_role: string;
  created_at: number;
}

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

/** A Human Input form of a paused run (one per run and node). */
export interface HumanInputFormTable {
  id: string;
  app_id: string;
  workflow_run_id: string;
  node_id: string;
  /** The end user who started the run. */
  end_user_id: string;
  /** JSON of the FormDefinition (see src/forms/form-definition.ts). */
  definition: string;
  /** waiting | submitted | timeout | expired | closed */
  status: string;
  /** Web-app token (≥128 bits), sealed (`SecretBox`; plain only in rows from before migration 016 until the form service seals them); null for email-only forms. */
  token: string | null;
  /** SHA-256 of the web-app token: the look-up key. */
  token_hash: string | null;
  /** Node-level deadline, epoch ms. */
  expiration_time: number;
  /** Global deadline, epoch ms; null when the global timeout is disabled. */
  global_deadline: number | null;
  selected_action_id: string | null;
  /** JSON of the validated submitted values. */
  submitted_data: string | null;
  submitted_at: number | null;
  submission_end_user_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface HumanInputDeliveryTable {
  id: string;
  form_id: string;
  /** webapp | email */
  type: string;
  /** JSON of the delivery method's config. */
  config: string;
  /** webapp: delivered. email: pending → delivered (every recipient sent) | failed (a recipient's last attempt failed). */
  status: string;
  /** The last sending error of an email delivery (names the recipient), else null. */
  last_error: string | null;
  created_at: number;
}

/** One email recipient of a form: a personal link (own token) and its sending state. */
export interface HumanInputFormRecipientTable {
  id: string;
  form_id: string;
  delivery_id: string;
  /** email_member | email_external */
  type: string;
  email: string;
  /** SHA-256 of the recipient's personal token (≥128 bits): the look-up key, unique over all recipients. */
  token_hash: string;
  /**
   * The token sealed (`SecretBox`) while its mail may still be sent; null once it is sent or has
   * finally failed (plain only in rows from before migration 020 until the runtime seals them).
   */
  token: string | null;
  /** pending | sent | failed */
  status: string;
  attempts: number;
  last_error: string | null;
  sent_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface JobTable {
  id: string;
  kind: string;
  /** JSON. */
  payload: string;
  /** queued | running | done | failed */
  status: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  lease_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

/** Jobs written inside a transaction, waiting for the relay to hand them to BullMQ (`QUEUE=bullmq`). */
export interface JobOutboxTable {
  /** Becomes the BullMQ job id, so a repeated hand-over adds nothing. */
  id: string;
  kind: string;
  /** JSON. */
  payload: string;
  run_at: number;
  max_attempts: number;
  created_at: number;
}

export interface DatasetTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  /** only_me | all_team_members | partial_members */
  permission: string;
  /** economy | high_quality | null (chosen by the first document) */
  indexing_technique: string | null;
  embedding_model: string | null;
  embedding_model_provider: string | null;
  /** JSON retrieval model. */
  retrieval_model: string;
  /** Bumped on every swap or delete of segments; in-process vector caches compare it. */
  index_version: number;
  /** 1 when the built-in metadata fields are enabled. */
  built_in_field_enabled: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** A knowledge tag of a workspace (`type` is always `knowledge`; names unique per workspace and type). */
export interface TagTable {
  id: string;
  workspace_id: string;
  type: string;
  name: string;
  created_by: string;
  created_at: number;
}

/** A tag bound to a dataset (`target_id`); one row per pair. */
export interface TagBindingTable {
  id: string;
  workspace_id: string;
  tag_id: string;
  target_id: string;
  created_by: string;
  created_at: number;
}

/** A custom metadata field of a dataset (`type`: string | number | time; names unique per dataset). */
export interface DatasetMetadataTable {
  id: string;
  workspace_id: string;
  dataset_id: string;
  type: string;
  name: string;
  created_by: string;
  created_at: number;
  updated_by: string | null;
  updated_at: number;
}

/** The value (JSON: string, number or null) of one metadata field on one document. */
export interface DocumentMetadataValueTable {
  document_id: string;
  metadata_id: string;
  dataset_id: string;
  value: string;
  created_by: string;
  created_at: number;
}

export interface DocumentTable {
  id: string;
  dataset_id: string;
  position: number;
  data_source_type: string;
  upload_file_id: string;
  name: string;
  created_from: string;
  created_by: string;
  process_rule_id: string;
  /** JSON process rule in effect for the latest accepted version. */
  process_rule: string;
  doc_form: string;
  doc_language: string;
  /** Batch of the latest accepted create/update. */
  batch: string;
  tokens: number;
  word_count: number;
  indexing_status: string;
  error: string | null;
  enabled: number;
  /** When and by which key the document was last disabled (null while enabled). */
  disabled_at: number | null;
  disabled_by: string | null;
  archived: number;
  hit_count: number;
  /** Segment generation retrieval serves (0 = none yet). */
  active_generation: number;
  /** Generation of the latest accepted create/update; only it may become active. */
  latest_generation: number;
  created_at: number;
  updated_at: number;
}

export interface IndexingRunTable {
  id: string;
  batch: string;
  dataset_id: string;
  document_id: string;
  generation: number;
  upload_file_id: string;
  process_rule: string;
  indexing_technique: string;
  /** waiting | parsing | cleaning | splitting | indexing | completed | error | paused */
  status: string;
  error: string | null;
  processing_started_at: number | null;
  parsing_completed_at: number | null;
  cleaning_completed_at: number | null;
  splitting_completed_at: number | null;
  completed_at: number | null;
  paused_at: number | null;
  stopped_at: number | null;
  /** The execution allowed to write this run (a fresh id per claim; null while paused or not claimed). */
  owner: string | null;
  total_segments: number;
  completed_segments: number;
  tokens: number;
  word_count: number;
  created_at: number;
  updated_at: number;
}

export interface SegmentTable {
  id: string;
  dataset_id: string;
  document_id: string;
  generation: number;
  position: number;
  content: string;
  word_count: number;
  tokens: number;
  hash: string;
  status: string;
  hit_count: number;
  created_at: number;
  completed_at: number | null;
  /** The parent chunk of a child chunk (`hierarchical_model`); null for a plain segment. */
  parent_id: string | null;
  /** The answer of a Q&A pair (`qa_model`; `content` is the question); null otherwise. */
  answer: string | null;
  /** 0 while disabled: kept in both indexes, filtered out by retrieval. */
  enabled: number;
  disabled_at: number | null;
  disabled_by: string | null;
  /** JSON array of strings given through the segment API; null = none. */
  keywords: string | null;
  /** Who created it through the segment API (null: made by indexing, i.e. the document's creator). */
  created_by: string | null;
  updated_at: number | null;
  updated_by: string | null;
  /** A child chunk's origin: null or `automatic` (indexing), `customized` (child-chunk API). */
  chunk_type: string | null;
}

/** A parent chunk of a `hierarchical_model` document: returned by retrieval when a child matches. */
export interface ParentChunkTable {
  id: string;
  dataset_id: string;
  document_id: string;
  generation: number;
  /** 1-based, in document order. */
  position: number;
  content: string;
  word_count: number;
  tokens: number;
  hash: string;
  hit_count: number;
  created_at: number;
  completed_at: number | null;
  /** 0 while disabled: kept in both indexes, filtered out by retrieval. */
  enabled: number;
  disabled_at: number | null;
  disabled_by: string | null;
  /** JSON array of strings given through the segment API; null = none. */
  keywords: string | null;
  /** Who created it through the segment API (null: made by indexing, i.e. the document's creator). */
  created_by: string | null;
  updated_at: number | null;
  updated_by: string | null;
}

export interface SegmentEmbeddingTable {
  segment_id: string;
  dataset_id: string;
  document_id: string;
  model: string;
  dims: number;
  /** base64 of little-endian float32. */
  embedding: string;
}

export type Seq = Generated<number>;

/** One workflow or chatflow run. */
export interface WorkflowRunTable {
  id: string;
  app_id: string;
  /** The app version (graph) the run started with; it resumes on it. */
  app_version: number;
  /** The id `…/stop` takes; kept across resumes. */
  task_id: string;
  /** workflow | advanced-chat */
  mode: string;
  end_user_id: string;
  conversation_id: string | null;
  message_id: string | null;
  /** running | succeeded | failed | stopped | partial-succeeded | paused */
  status: string;
  /** JSON object of the run inputs. */
  inputs: string;
  /** JSON object, null until the run ends. */
  outputs: string | null;
  error: string | null;
  total_steps: number;
  total_tokens: number;
  exceptions_count: number;
  elapsed_ms: number;
  /** 1 once a stop was requested (the durable stop signal). */
  stop_requested: number;
  /** Sequence number of the last event appended to the run's log. */
  last_seq: number;
  /** Refreshed by each journal flush of the process running it (informational). */
  heartbeat_at: number;
  created_at: number;
  finished_at: number | null;
  /** The fencing token: incremented by each claim; the owner's writes are conditional on it. */
  owner_epoch: number;
  /** The job executing the run (null while it waits, paused or ended). */
  owner_job: string | null;
}

/** The per-run event log: the exact wire payloads, in order. */
export interface WorkflowRunEventTable {
  run_id: string;
  seq: number;
  event: string;
  /** The JSON payload as sent in `data:` frames. */
  payload: string;
  created_at: number;
}

/** The latest persisted engine state of a run (plain versioned JSON). */
export interface WorkflowRunSnapshotTable {
  run_id: string;
  version: number;
  state: string;
  updated_at: number;
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

/** Console/CLI identities that leave admin feedback. */
export interface AccountTable {
  id: string;
  name: string;
  /** Where Human Input mail to this member goes (`dovetail account create --email`); null when unset. */
  email: string | null;
  created_at: number;
}

/** The newest feedback `seq` a key's reader saw on page 1, per page size. */
export interface FeedbackPageSnapshotTable {
  api_key_id: string;
  page_limit: number;
  max_seq: number;
  created_at: number;
}

/** A question/answer pair of an app (Dify's `message_annotations`); `content` is the answer. */
export interface AppAnnotationTable {
  seq: Seq;
  id: string;
  app_id: string;
  question: string;
  content: string;
  hit_count: number;
  /** Always null: the Service API has no accounts. */
  account_id: string | null;
  created_at: number;
  updated_at: number;
}

/** An app's annotation reply setting; a row exists exactly while reply is enabled. */
export interface AppAnnotationSettingTable {
  app_id: string;
  score_threshold: number;
  embedding_provider: string;
  embedding_model: string;
  created_at: number;
  updated_at: number;
}

/** The embedding of an annotation's question, with the model and the question text it was made from. */
export interface AnnotationEmbeddingTable {
  annotation_id: string;
  app_id: string;
  model: string;
  question: string;
  dims: number;
  /** base64 of little-endian float32. */
  embedding: string;
}

/** One annotation reply (Dify's `app_annotation_hit_histories`). */
export interface AnnotationHitHistoryTable {
  id: string;
  app_id: string;
  annotation_id: string;
  message_id: string;
  end_user_id: string;
  /** The query that matched. */
  question: string;
  /** api */
  source: string;
  score: number;
  annotation_question: string;
  annotation_content: string;
  created_at: number;
}

/** An annotation reply enable/disable job; `status` waiting | processing | completed | error. */
export interface AnnotationJobTable {
  id: string;
  app_id: string;
  /** enable | disable */
  action: string;
  status: string;
  error_msg: string;
  score_threshold: number;
  embedding_provider: string;
  embedding_model: string;
  created_at: number;
  updated_at: number;
}

export interface ServerSecretTable {
  name: string;
  value: string;
  created_at: number;
}
