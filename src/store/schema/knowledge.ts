/** Row types of datasets, tags, metadata, documents, indexing runs, segments and embeddings (see src/store/schema.ts). */

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
  /** External knowledge (JSON, see src/knowledge/external/external-knowledge.ts); null/absent for Dovetail's own. */
  external_knowledge?: string | null;
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
  /**
   * The execution that is parsing the run's file: set before the parse, cleared after it (and by
   * a pause). Still set when a new execution claims the run, it says the process parsing the file
   * stopped mid-parse (a parse that killed its process), and the document ends in `error`.
   */
  parsing_owner: string | null;
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

/** A dataset's knowledge pipeline (migration 035): the `kind: rag_pipeline` DSL as imported and its parsed graph (JSON). */
export interface DatasetPipelineTable {
  id: string;
  dataset_id: string;
  name: string;
  dsl: string;
  graph: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}
