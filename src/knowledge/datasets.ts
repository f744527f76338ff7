import type { Kysely } from 'kysely';
import type { Database, DatasetTable } from '../store/schema.js';
import type { Clock } from '../infra/clock.js';
import { toSeconds } from '../infra/clock.js';
import { newId } from '../infra/ids.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { datasetNameDuplicate } from './errors.js';
import type { Embedder } from './ingest/embedder.js';
import type { DatasetTag } from './documents/tags.js';
import { DatasetStore } from './dataset-store.js';
import { DocumentStore, type DocumentTotals } from './documents/document-store.js';
import { TagStore } from './documents/tag-store.js';
import { parseRetrievalModel, retrievalModelToWire, type RetrievalModel } from './retrieval/retrieval-model.js';
import { checkExternal, externalOf, externalToWire, type ExternalKnowledge } from './external/external-knowledge.js';

export const INDEXING_TECHNIQUES = ['economy', 'high_quality'] as const;
export type IndexingTechnique = (typeof INDEXING_TECHNIQUES)[number];
const PERMISSIONS = ['only_me', 'all_team_members', 'partial_members'];

export interface CreateDatasetInput {
  readonly name: unknown;
  readonly description?: unknown;
  readonly indexingTechnique?: unknown;
  readonly permission?: unknown;
  readonly retrievalModel?: unknown;
  readonly createdBy: string;
}

export function datasetNotFound() {
  return notFound('Dataset not found.');
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.trim().length < 1 || name.length > 40) throw invalidParam('Name must be between 1 to 40 characters.');
  return name.trim();
}

function checkTechnique(v: unknown): IndexingTechnique | null {
  if (v === undefined || v === null || v === '') return null;
  if (!INDEXING_TECHNIQUES.includes(v as IndexingTechnique)) throw invalidParam('indexing_technique must be economy or high_quality.');
  return v as IndexingTechnique;
}

function checkPermission(v: unknown): string {
  if (v === undefined || v === null) return 'only_me';
  if (typeof v !== 'string' || !PERMISSIONS.includes(v)) throw invalidParam(`permission must be one of ${PERMISSIONS.join(', ')}.`);
  return v;
}

export type DatasetStats = DocumentTotals;

/** Knowledge bases of a workspace. */
export class DatasetService {
  readonly #store: DatasetStore;
  readonly #documents: DocumentStore;
  readonly #tags: TagStore;
  readonly #clock: Clock;
  readonly #embedder: Embedder;
  readonly #topKMax: number;
  readonly #seal: (plain: string) => Promise<string>;

  /** `seal` encrypts external knowledge API keys at rest (SecretBox). */
  constructor(db: Kysely<Database>, clock: Clock, embedder: Embedder, topKMax: number, seal: (plain: string) => Promise<string>) {
    this.#seal = seal;
    this.#store = new DatasetStore(db);
    this.#documents = new DocumentStore(db);
    this.#tags = new TagStore(db);
    this.#clock = clock;
    this.#embedder = embedder;
    this.#topKMax = topKMax;
  }

  async create(workspaceId: string, input: CreateDatasetInput): Promise<DatasetTable> {
    const name = checkName(input.name);
    if (input.description !== undefined && input.description !== null && (typeof input.description !== 'string' || input.description.length > 400)) {
      throw invalidParam('Description cannot exceed 400 characters.');
    }
    const technique = checkTechnique(input.indexingTechnique);
    const permission = checkPermission(input.permission);
    const retrieval = parseRetrievalModel(input.retrievalModel, this.#topKMax, technique === 'high_quality' ? 'semantic_search' : 'keyword_search');
    if (await this.#store.nameTaken(workspaceId, name)) throw datasetNameDuplicate();
    const now = this.#clock.now();
    const row: DatasetTable = {
      id: newId(),
      workspace_id: workspaceId,
      name,
      description: typeof input.description === 'string' ? input.description : '',
      permission,
      indexing_technique: technique,
      embedding_model: technique === 'high_quality' ? this.#embedder.model : null,
      embedding_model_provider: technique === 'high_quality' ? this.#embedder.provider : null,
      retrieval_model: JSON.stringify(retrievalModelToWire(retrieval)),
      index_version: 0,
      built_in_field_enabled: 0,
      created_by: input.createdBy,
      created_at: now,
      updated_at: now,
    };
    await this.#store.insert(row);
    return row;
  }

  /**
   * A dataset backed by an External Knowledge API (`dovetail dataset create --external`): every
   * search goes to `POST {endpoint}/retrieval`; it has no documents. Its key is sealed at rest.
   * `check` (the client's `check`, Dify's endpoint check) is run on the endpoint and key first
   * unless left out (`--no-check`).
   */
  async createExternal(
    workspaceId: string,
    input: {
      name: unknown;
      description?: unknown;
      endpoint: unknown;
      apiKey: unknown;
      knowledgeId: unknown;
      topK?: unknown;
      scoreThreshold?: unknown;
      createdBy: string;
      check?: (endpoint: string, apiKey: string) => Promise<void>;
    },
  ): Promise<DatasetTable> {
    const name = checkName(input.name);
    const e = checkExternal(input, this.#topKMax);
    if (await this.#store.nameTaken(workspaceId, name)) throw datasetNameDuplicate();
    if (input.check) await input.check(e.endpoint, e.apiKey);
    const now = this.#clock.now();
    const ext: ExternalKnowledge = { apiId: newId(), apiName: new URL(e.endpoint).host, ...e, apiKey: await this.#seal(e.apiKey) };
    const row: DatasetTable = {
      id: newId(),
      workspace_id: workspaceId,
      name,
      description: typeof input.description === 'string' ? input.description : '',
      permission: 'only_me',
      indexing_technique: null,
      embedding_model: null,
      embedding_model_provider: null,
      retrieval_model: JSON.stringify(retrievalModelToWire(parseRetrievalModel(undefined, this.#topKMax, 'semantic_search'))),
      index_version: 0,
      built_in_field_enabled: 0,
      external_knowledge: JSON.stringify(ext),
      created_by: input.createdBy,
      created_at: now,
      updated_at: now,
    };
    await this.#store.insert(row);
    return row;
  }

  async get(workspaceId: string, id: string): Promise<DatasetTable> {
    const row = await this.#store.find(workspaceId, id);
    if (!row) throw datasetNotFound();
    return row;
  }

  /** The ids among `ids` that name no dataset of the workspace (import warnings). */
  async missing(workspaceId: string, ids: readonly string[]): Promise<string[]> {
    const found = await this.#store.existing(workspaceId, ids);
    return ids.filter((id) => !found.has(id));
  }

  /**
   * A page of the workspace's datasets, newest first. With `tagIds`, only datasets bound to any of
   * those knowledge tags (Dify's `get_target_ids_by_tag_ids`): none when no dataset is.
   */
  async list(workspaceId: string, page: number, limit: number, keyword?: string, tagIds?: readonly string[]): Promise<{ rows: DatasetTable[]; total: number }> {
    return this.#store.page(workspaceId, page, limit, keyword, tagIds === undefined ? undefined : { tags: this.#tags, tagIds });
  }

  async update(workspaceId: string, id: string, patch: Record<string, unknown>): Promise<DatasetTable> {
    const ds = await this.get(workspaceId, id);
    const set: Partial<DatasetTable> = {};
    if (patch.name !== undefined) {
      set.name = checkName(patch.name);
      if (await this.#store.nameTaken(workspaceId, set.name, id)) throw datasetNameDuplicate();
    }
    if (patch.description !== undefined) {
      if (typeof patch.description !== 'string' || patch.description.length > 400) throw invalidParam('Description cannot exceed 400 characters.');
      set.description = patch.description;
    }
    if (patch.permission !== undefined) set.permission = checkPermission(patch.permission);
    if (patch.indexing_technique !== undefined) {
      const t = checkTechnique(patch.indexing_technique);
      if (t !== ds.indexing_technique) {
        if (await this.#documents.hasAny(id)) throw invalidParam('indexing_technique cannot be changed once the dataset has documents.');
        set.indexing_technique = t;
        set.embedding_model = t === 'high_quality' ? this.#embedder.model : null;
        set.embedding_model_provider = t === 'high_quality' ? this.#embedder.provider : null;
      }
    }
    if (patch.retrieval_model !== undefined) {
      set.retrieval_model = JSON.stringify(retrievalModelToWire(parseRetrievalModel(patch.retrieval_model, this.#topKMax, 'keyword_search')));
    }
    if (Object.keys(set).length === 0) return ds;
    set.updated_at = this.#clock.now();
    await this.#store.update(id, set);
    return { ...ds, ...set };
  }

  /** Sets the technique chosen by the first document of a dataset that had none. */
  async setTechnique(id: string, t: IndexingTechnique): Promise<void> {
    await this.#store.setTechniqueIfUnset(id, {
      indexing_technique: t,
      embedding_model: t === 'high_quality' ? this.#embedder.model : null,
      embedding_model_provider: t === 'high_quality' ? this.#embedder.provider : null,
      updated_at: this.#clock.now(),
    });
  }

  retrievalModel(ds: DatasetTable): RetrievalModel {
    return parseRetrievalModel(JSON.parse(ds.retrieval_model), this.#topKMax, 'keyword_search');
  }

  async stats(ids: readonly string[]): Promise<Map<string, DatasetStats>> {
    return this.#documents.totals(ids);
  }
}

/** What a dataset object reports besides its row and stats: its tags and metadata fields. */
export interface DatasetExtras {
  readonly tags: readonly DatasetTag[];
  readonly docMetadata: readonly { id: string; name: string; type: string }[];
  /** The id of the knowledge pipeline that fills it (Dify's `runtime_mode: rag_pipeline`), if one does. */
  readonly pipelineId?: string;
}

/** Dify's dataset object. */
export function datasetToWire(ds: DatasetTable, stats: DatasetStats | undefined, extras?: DatasetExtras): Record<string, unknown> {
  return {
    id: ds.id,
    name: ds.name,
    description: ds.description,
    provider: ds.external_knowledge ? 'external' : 'vendor',
    permission: ds.permission,
    data_source_type: stats?.documents ? 'upload_file' : null,
    indexing_technique: ds.indexing_technique,
    app_count: 0,
    document_count: stats?.documents ?? 0,
    word_count: stats?.words ?? 0,
    created_by: ds.created_by,
    author_name: null,
    created_at: toSeconds(ds.created_at),
    updated_by: ds.created_by,
    updated_at: toSeconds(ds.updated_at),
    embedding_model: ds.embedding_model,
    embedding_model_provider: ds.embedding_model_provider,
    embedding_available: true,
    retrieval_model_dict: JSON.parse(ds.retrieval_model) as unknown,
    summary_index_setting: null,
    tags: extras?.tags ?? [],
    // Dify: its documents' form; `text_model` (not Dify's null) before the first one, as the schema types it a string.
    doc_form: stats?.docForm ?? 'text_model',
    ...externalToWire(externalOf(ds)),
    doc_metadata: extras?.docMetadata ?? [],
    built_in_field_enabled: ds.built_in_field_enabled === 1,
    pipeline_id: extras?.pipelineId ?? null,
    runtime_mode: extras?.pipelineId ? 'rag_pipeline' : 'general',
    chunk_structure: null,
    icon_info: null,
    // a pipeline attached here runs at once (there is no draft to publish)
    is_published: extras?.pipelineId !== undefined,
    total_documents: stats?.documents ?? 0,
    total_available_documents: stats?.available ?? 0,
    enable_api: true,
    is_multimodal: false,
    maintainer: null,
    partial_member_list: [],
  };
}
