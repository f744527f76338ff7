import type { WorkspaceTable, AppTable, AppVersionTable, ApiKeyTable, EndUserTable, AccountTable, ConsoleSessionTable, ServerSecretTable, SiteTable } from './schema/apps.js';
import type { UploadFileTable } from './schema/files.js';
import type { ConversationVariableTable, ConversationTable, MessageAgentThoughtTable, MessageTable, MessageFeedbackTable, FeedbackPageSnapshotTable, PinnedConversationTable, SavedMessageTable } from './schema/messages.js';
import type { HumanInputFormTable, HumanInputDeliveryTable, HumanInputFormRecipientTable } from './schema/forms.js';
import type { JobTable, JobOutboxTable, WorkerHeartbeatTable } from './schema/queue.js';
import type { DatasetTable, TagTable, TagBindingTable, DatasetMetadataTable, DocumentMetadataValueTable, DocumentTable, IndexingRunTable, SegmentTable, ParentChunkTable, SegmentEmbeddingTable, DatasetPipelineTable } from './schema/knowledge.js';
import type { WorkflowRunTable, WorkflowRunEventTable, WorkflowRunSnapshotTable } from './schema/runs.js';
import type { AppMcpServerTable } from './schema/publish.js';
import type { AppTriggerTable } from './schema/triggers.js';
import type { AppAnnotationTable, AppAnnotationSettingTable, AnnotationEmbeddingTable, AnnotationHitHistoryTable, AnnotationJobTable } from './schema/annotations.js';

import type { Kysely } from 'kysely';

export type * from './schema/apps.js';
export type * from './schema/files.js';
export type * from './schema/messages.js';
export type * from './schema/forms.js';
export type * from './schema/queue.js';
export type * from './schema/knowledge.js';
export type * from './schema/runs.js';
export type * from './schema/annotations.js';
export type * from './schema/publish.js';
export type * from './schema/triggers.js';

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
  sites: SiteTable;
  upload_files: UploadFileTable;
  conversations: ConversationTable;
  messages: MessageTable;
  message_agent_thoughts: MessageAgentThoughtTable;
  workflow_runs: WorkflowRunTable;
  workflow_run_events: WorkflowRunEventTable;
  workflow_run_snapshots: WorkflowRunSnapshotTable;
  message_feedbacks: MessageFeedbackTable;
  pinned_conversations: PinnedConversationTable;
  saved_messages: SavedMessageTable;
  accounts: AccountTable;
  console_sessions: ConsoleSessionTable;
  feedback_page_snapshots: FeedbackPageSnapshotTable;
  human_input_forms: HumanInputFormTable;
  human_input_deliveries: HumanInputDeliveryTable;
  human_input_form_recipients: HumanInputFormRecipientTable;
  jobs: JobTable;
  job_outbox: JobOutboxTable;
  worker_heartbeats: WorkerHeartbeatTable;
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
  app_mcp_servers: AppMcpServerTable;
  app_triggers: AppTriggerTable;
  dataset_pipelines: DatasetPipelineTable;
  tag_bindings: TagBindingTable;
  dataset_metadata: DatasetMetadataTable;
  document_metadata_values: DocumentMetadataValueTable;
}

/**
 * The caller's database or transaction (a Kysely `Transaction` is a `Kysely`): store methods whose
 * writes must commit with something else take one.
 */
export type Executor = Kysely<Database>;
