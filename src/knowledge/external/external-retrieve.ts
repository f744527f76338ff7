import { invalidParam } from '../../infra/errors.js';
import { isObject } from '../../infra/objects.js';
import { ExternalRetrievalFailure, type ExternalKnowledge, type ExternalKnowledgeClient } from './external-knowledge.js';

/**
 * `POST /datasets/{id}/retrieve` on an external dataset, as Dify's hit testing answers it:
 * `{query: {content}, records: [{content, title, score, metadata}]}`, with the request's
 * `external_retrieval_model` (`top_k`, `score_threshold`, `score_threshold_enabled`) or the
 * dataset's own. An API that does not answer with records gives none, as in Dify; the log says why.
 */
export async function externalRetrieve(
  client: ExternalKnowledgeClient,
  ext: ExternalKnowledge,
  query: string,
  raw: unknown,
  log: { warn(obj: object, msg: string): void },
): Promise<Record<string, unknown>> {
  if (query.trim() === '') throw invalidParam('query is required.');
  let topK = ext.topK;
  let threshold = ext.scoreThresholdEnabled ? ext.scoreThreshold : 0;
  if (raw !== undefined && raw !== null) {
    if (!isObject(raw)) throw invalidParam('external_retrieval_model must be an object.');
    if (raw.top_k !== undefined) {
      if (typeof raw.top_k !== 'number' || !Number.isInteger(raw.top_k) || raw.top_k < 1) throw invalidParam('external_retrieval_model.top_k must be a positive integer.');
      topK = raw.top_k;
    }
    if (raw.score_threshold_enabled !== undefined || raw.score_threshold !== undefined) {
      const t = raw.score_threshold ?? 0;
      if (typeof t !== 'number' || t < 0 || t > 1) throw invalidParam('external_retrieval_model.score_threshold must be a number between 0 and 1.');
      threshold = raw.score_threshold_enabled === true ? t : 0;
    }
  }
  let records: Awaited<ReturnType<ExternalKnowledgeClient['retrieve']>> = [];
  try {
    records = await client.retrieve(ext, query, { topK, scoreThreshold: threshold });
  } catch (err) {
    if (!(err instanceof ExternalRetrievalFailure)) throw err;
    log.warn({ endpoint: ext.endpoint, knowledge_id: ext.knowledgeId }, `external knowledge retrieval gave no records: ${err.message}`);
  }
  return { query: { content: query }, records: records.map((r) => ({ content: r.content, title: r.title, score: r.score, metadata: r.metadata ?? {} })) };
}
