import type { Seq } from './runs.js';

/** Row types of annotations, their settings, embeddings, hit history and jobs (see src/store/schema.ts). */

/** A question/answer pair of an app (Dify's `message_annotations`); `content` is the answer. */
export interface AppAnnotationTable {
  seq: Seq;
  id: string;
  app_id: string;
  question: string;
  content: string;
  hit_count: number;
  /** The console account that wrote it; null over the Service API (it has no accounts). */
  account_id: string | null;
  /** The message it corrects ("improve this answer"), null when written from scratch. */
  message_id: string | null;
  conversation_id: string | null;
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
