import { Type } from '@sinclair/typebox';
import { handlerValidated, multipartForm } from './described.js';

/**
 * Request schemas of the knowledge routes (and forms), which validate in their handlers with
 * Dify's messages: here for the API description only (`handlerValidated`). Names and types follow
 * Dify's Service API; the handlers are the authority on what is accepted.
 */
const O = Type.Optional;
const str = (description?: string) => O(Type.String(description ? { description } : {}));
const obj = (description?: string) => O(Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) }));
const strings = (description?: string) => O(Type.Array(Type.String(), description ? { description } : {}));

const page = { page: O(Type.Integer({ minimum: 1, default: 1 })), limit: O(Type.Integer({ minimum: 1, default: 20 })), keyword: str('Search keyword.') };

export const DatasetListQuery = handlerValidated({
  ...page,
  include_all: O(Type.Boolean()),
  tag_ids: strings('Only datasets with these tags.'),
});
export const DocumentListQuery = handlerValidated({ ...page, status: str('Indexing status filter.') });
export const DocumentQuery = handlerValidated({ metadata: str('all | only | without') });
export const SegmentListQuery = handlerValidated({ ...page, status: strings('Segment status filter.') });
export const ChildChunkListQuery = handlerValidated(page);

const datasetFields = {
  name: str(),
  description: str(),
  indexing_technique: str('high_quality | economy'),
  permission: str('only_me | all_team_members | partial_members'),
  embedding_model: str(),
  embedding_model_provider: str(),
  retrieval_model: obj('Retrieval settings.'),
};
export const DatasetCreateBody = handlerValidated({
  ...datasetFields,
  provider: str('vendor | external'),
  external_knowledge_api_id: str(),
  external_knowledge_id: str(),
  summary_index_setting: obj(),
});
export const DatasetUpdateBody = handlerValidated({
  ...datasetFields,
  partial_member_list: O(Type.Array(Type.Object({}, { additionalProperties: true }))),
  external_retrieval_model: obj(),
  external_knowledge_id: str(),
  external_knowledge_api_id: str(),
});
export const RetrieveBody = handlerValidated({
  query: Type.String({ description: 'The query.' }),
  retrieval_model: obj(),
  attachment_ids: strings(),
  external_retrieval_model: obj(),
});

const documentOptions = {
  doc_form: str('text_model | hierarchical_model | qa_model'),
  doc_language: str(),
  process_rule: obj('Segmentation rules.'),
  retrieval_model: obj(),
};
export const CreateByTextBody = handlerValidated({
  name: Type.String(),
  text: Type.String(),
  indexing_technique: str(),
  ...documentOptions,
  embedding_model: str(),
  embedding_model_provider: str(),
  original_document_id: str(),
});
export const UpdateByTextBody = handlerValidated({ name: str(), text: str(), ...documentOptions });
export const DocumentFileForm = multipartForm({ data: 'JSON of the document options (as create-by-text, without name and text).' });
export const DocumentIdsBody = handlerValidated({ document_ids: Type.Array(Type.String()) });

export const SegmentsCreateBody = handlerValidated({ segments: Type.Array(Type.Object({ content: Type.String(), answer: str(), keywords: strings() }, { additionalProperties: true })) });
export const SegmentUpdateBody = handlerValidated({ segment: Type.Object({ content: str(), answer: str(), keywords: strings(), enabled: O(Type.Boolean()), regenerate_child_chunks: O(Type.Boolean()) }, { additionalProperties: true }) });
export const ChildChunkBody = handlerValidated({ content: Type.String() });

export const TagCreateBody = handlerValidated({ name: Type.String() });
export const TagRenameBody = handlerValidated({ tag_id: Type.String(), name: Type.String() });
export const TagDeleteBody = handlerValidated({ tag_id: Type.String() });
export const TagBindingBody = handlerValidated({ tag_ids: Type.Array(Type.String()), target_id: Type.String() });
export const TagUnbindingBody = handlerValidated({ tag_ids: strings(), tag_id: str(), target_id: Type.String() });

export const MetadataCreateBody = handlerValidated({ type: Type.String({ description: 'string | number | time' }), name: Type.String() });
export const MetadataRenameBody = handlerValidated({ name: Type.String() });
export const DocumentMetadataBody = handlerValidated({
  operation_data: Type.Array(Type.Object({ document_id: Type.String(), metadata_list: Type.Array(Type.Object({}, { additionalProperties: true })) }, { additionalProperties: true })),
});

export const FormSubmitBody = handlerValidated({
  inputs: Type.Object({}, { additionalProperties: true, description: 'Form values by output variable name.' }),
  action: Type.String({ description: 'The id of the button pressed.' }),
  user: Type.String(),
});
export const UploadForm = multipartForm({ user: 'The end user.' });
