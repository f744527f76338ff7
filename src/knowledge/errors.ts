import { defineError } from '../infra/errors.js';

/** Raised by a parser; the document ends in `error` with this message. */
export class ParseError extends Error {
  override name = 'ParseError';
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
