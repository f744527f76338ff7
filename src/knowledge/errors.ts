import { defineError, notFound } from '../infra/errors.js';

/**
 * How an indexing job's failure is handled (see docs/decisions.md, "Indexing failures"):
 * - `DocumentRefused` (and its `ParseError`): the document itself cannot be indexed (unparseable,
 *   empty, no text after cleaning, no Q&A pairs) or a setting it needs is missing. Retrying cannot
 *   help: the run ends in `error` with this message at once.
 * - everything else (storage, database, Redis, a model or embedding upstream, `IndexingUnavailable`)
 *   is thrown to the queue, which retries the job with back-off; its last attempt ends the
 *   document in `error` with the reason (the job's `onFailed`).
 */
export class DocumentRefused extends Error {
  override name = 'DocumentRefused';
}

/** Raised by a parser; the document ends in `error` with this message. */
export class ParseError extends DocumentRefused {
  override name = 'ParseError';
}

/** Something indexing needs is not there right now (the stored file cannot be read): the job is retried. */
export class IndexingUnavailable extends Error {
  override name = 'IndexingUnavailable';
}

export const datasetNameDuplicate = defineError(
  'dataset_name_duplicate',
  409,
  () => 'The dataset name already exists. Please modify your dataset name.',
);
export const documentIndexing = defineError(
  'document_indexing',
  400,
  (message: string = 'The document is being processed and cannot be edited.') => message,
);
export const invalidAction = defineError('invalid_action', 400, (message: string) => message);

export const segmentNotFound = () => notFound('Segment not found.');
