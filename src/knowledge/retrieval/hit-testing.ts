import { toSeconds } from '../../infra/clock.js';
import type { DatasetTable } from '../../store/schema.js';
import type { DatasetService } from '../datasets.js';
import type { MetadataService } from '../documents/metadata.js';
import { externalOf, type ExternalKnowledgeClient } from '../external/external-knowledge.js';
import { externalRetrieve } from '../external/external-retrieve.js';
import { countHits, type HitCounter } from './hit-counter.js';
import { parseRetrievalModel } from './retrieval-model.js';
import type { RetrievalService } from './retrieval.js';

/** What a retrieval test is asked (the body of `POST /datasets/{id}/retrieve`, Dify's hit testing). */
export interface HitTestRequest {
  readonly query?: unknown;
  readonly retrieval_model?: unknown;
  readonly external_retrieval_model?: unknown;
}

export interface HitTestingDeps {
  readonly datasets: DatasetService;
  readonly retrieval: RetrievalService;
  readonly metadata: MetadataService;
  readonly hits: HitCounter;
  readonly external: ExternalKnowledgeClient;
  readonly topKMax: number;
  /** `RETRIEVE_COUNTS_HITS`. */
  readonly countsHits: boolean;
}

/**
 * Dify's hit testing: a query against one dataset, answered with the records (segment, score,
 * child chunks) as Dify's `POST /datasets/{id}/retrieve` (Service API) and the console's retrieval
 * test both show them. The request's `retrieval_model` or the dataset's own; an external dataset
 * asks its API.
 */
export class HitTestingService {
  readonly #d: HitTestingDeps;

  constructor(deps: HitTestingDeps) {
    this.#d = deps;
  }

  async test(ds: DatasetTable, b: HitTestRequest, log: { warn(obj: object, msg: string): void }): Promise<Record<string, unknown>> {
    const d = this.#d;
    const ext = externalOf(ds);
    if (ext) return externalRetrieve(d.external, ext, typeof b.query === 'string' ? b.query : '', b.external_retrieval_model, log);
    const model =
      b.retrieval_model === undefined || b.retrieval_model === null
        ? d.datasets.retrievalModel(ds)
        : parseRetrievalModel(b.retrieval_model, d.topKMax, ds.indexing_technique === 'high_quality' ? 'semantic_search' : 'keyword_search');
    const query = typeof b.query === 'string' ? b.query : '';
    const retrieved = await d.retrieval.retrieve([ds.id], query, model);
    // Dify's hit testing does not count hits (dify#24077); Dovetail does unless RETRIEVE_COUNTS_HITS=false.
    const found = d.countsHits ? countHits(d.hits, retrieved) : retrieved;
    const docMetadata = await d.metadata.docMetadataColumns(ds, found.map((s) => s.documentId));
    return {
      query: { content: query },
      records: found.map((s) => ({
        segment: {
          id: s.segmentId,
          position: s.position,
          document_id: s.documentId,
          content: s.content,
          sign_content: s.content,
          answer: s.answer ?? null,
          word_count: s.wordCount,
          tokens: s.tokens,
          keywords: [],
          index_node_id: s.segmentId,
          index_node_hash: s.hash,
          hit_count: s.hitCount,
          enabled: true,
          disabled_at: null,
          disabled_by: null,
          status: 'completed',
          created_by: ds.created_by,
          created_at: toSeconds(s.createdAt),
          indexing_at: toSeconds(s.createdAt),
          completed_at: s.completedAt === null ? null : toSeconds(s.completedAt),
          error: null,
          stopped_at: null,
          document: { id: s.documentId, data_source_type: 'upload_file', name: s.documentName, doc_type: null, doc_metadata: docMetadata.get(s.documentId) ?? null },
        },
        child_chunks: (s.childChunks ?? []).map((c) => ({ id: c.id, content: c.content, position: c.position, score: c.score })),
        score: s.score,
        tsne_position: null,
        files: [],
        summary: null,
      })),
    };
  }
}
