import type { Kysely } from 'kysely';
import type { Database, DatasetMetadataTable, DatasetTable, DocumentTable } from '../../store/schema.js';
import { DatasetStore } from '../dataset-store.js';
import { DocumentStore } from './document-store.js';
import { MetadataStore } from './metadata-store.js';
import type { Clock } from '../../infra/clock.js';
import { toSeconds } from '../../infra/clock.js';
import { newId } from '../../infra/ids.js';
import { invalidParam, notFound } from '../../infra/errors.js';
import { matchesFilter, type MetadataFilter, type MetadataValue } from '../retrieval/metadata-filter.js';

export const METADATA_TYPES = ['string', 'number', 'time'] as const;
export type MetadataType = (typeof METADATA_TYPES)[number];

/** Dify's built-in fields, in its order, with their types. */
export const BUILT_IN_FIELDS = [
  { name: 'document_name', type: 'string' },
  { name: 'uploader', type: 'string' },
  { name: 'upload_date', type: 'time' },
  { name: 'last_update_date', type: 'time' },
  { name: 'source', type: 'string' },
] as const satisfies readonly { name: string; type: MetadataType }[];

export type { MetadataValue };

/** One field of a document's `doc_metadata` (built-in ones have the id `built-in`). */
export interface DocumentMetadataItem {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly value: MetadataValue;
}

/** Dify's `MetadataDataSource`: what `source` reports for a document's `data_source_type`. */
const SOURCES: Readonly<Record<string, string>> = { upload_file: 'file_upload', website_crawl: 'website', notion_import: 'notion' };

/** The built-in fields' values for a document (Dify's `get_built_in_fields`). */
export function builtInValues(d: DocumentTable): DocumentMetadataItem[] {
  const values: Record<(typeof BUILT_IN_FIELDS)[number]['name'], MetadataValue> = {
    document_name: d.name,
    // Dify reports the uploading account's name; a knowledge key has none.
    uploader: null,
    upload_date: toSeconds(d.created_at),
    last_update_date: toSeconds(d.updated_at),
    source: SOURCES[d.data_source_type] ?? d.data_source_type,
  };
  return BUILT_IN_FIELDS.map((f) => ({ id: 'built-in', name: f.name, type: f.type, value: values[f.name] }));
}

function metadataNotFound() {
  return notFound('Metadata not found.');
}

function isValue(v: unknown): v is MetadataValue {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

interface Operation {
  readonly documentId: string;
  readonly values: ReadonlyMap<string, MetadataValue>;
  readonly partial: boolean;
}

/**
 * Custom metadata fields of a dataset, their values on documents, and the built-in fields
 * (Dify's `MetadataService`). Names are unique per dataset, never a built-in field's, and at most
 * `nameMax` characters (`KNOWLEDGE_METADATA_NAME_MAX_LENGTH`, default 255, as Dify).
 */
export class MetadataService {
  readonly #db: Kysely<Database>;
  readonly #store: MetadataStore;
  readonly #documents: DocumentStore;
  readonly #datasets: DatasetStore;
  readonly #clock: Clock;
  readonly #nameMax: number;

  constructor(db: Kysely<Database>, clock: Clock, nameMax: number) {
    this.#db = db;
    this.#store = new MetadataStore(db);
    this.#documents = new DocumentStore(db);
    this.#datasets = new DatasetStore(db);
    this.#clock = clock;
    this.#nameMax = nameMax;
  }

  async #checkName(datasetId: string, v: unknown): Promise<string> {
    if (typeof v !== 'string' || v.trim() === '') throw invalidParam('name is required.');
    if (v.length > this.#nameMax) throw invalidParam(`Metadata name cannot exceed ${this.#nameMax} characters.`);
    if (await this.#store.nameTaken(datasetId, v)) throw invalidParam('Metadata name already exists.');
    if (BUILT_IN_FIELDS.some((f) => f.name === v)) throw invalidParam('Metadata name already exists in Built-in fields.');
    return v;
  }

  async #find(datasetId: string, id: string): Promise<DatasetMetadataTable> {
    const row = await this.#store.find(datasetId, id);
    if (!row) throw metadataNotFound();
    return row;
  }

  /** The dataset's custom fields, oldest first. */
  async fields(datasetId: string): Promise<DatasetMetadataTable[]> {
    return this.#store.fields([datasetId]);
  }

  /** `GET /datasets/{id}/metadata`: custom fields with the number of documents that have a value. */
  async list(ds: DatasetTable): Promise<{ doc_metadata: { id: string; name: string; type: string; count: number }[]; built_in_field_enabled: boolean }> {
    const [fields, byId] = await Promise.all([this.fields(ds.id), this.#store.valueCounts(ds.id)]);
    return {
      doc_metadata: fields.map((f) => ({ id: f.id, name: f.name, type: f.type, count: byId.get(f.id) ?? 0 })),
      built_in_field_enabled: ds.built_in_field_enabled === 1,
    };
  }

  async create(ds: DatasetTable, input: { type: unknown; name: unknown; createdBy: string }): Promise<DatasetMetadataTable> {
    if (typeof input.type !== 'string' || !METADATA_TYPES.includes(input.type as MetadataType)) throw invalidParam(`type must be one of ${METADATA_TYPES.join(', ')}.`);
    const name = await this.#checkName(ds.id, input.name);
    const now = this.#clock.now();
    const row: DatasetMetadataTable = {
      id: newId(),
      workspace_id: ds.workspace_id,
      dataset_id: ds.id,
      type: input.type,
      name,
      created_by: input.createdBy,
      created_at: now,
      updated_by: null,
      updated_at: now,
    };
    try {
      await this.#store.insert(row);
    } catch (err) {
      // The unique index settles a concurrent create of the same name.
      if (await this.#store.nameTaken(ds.id, name)) throw invalidParam('Metadata name already exists.');
      throw err;
    }
    return row;
  }

  /** Renames a field. Values are kept by field id, so documents follow the new name. */
  async rename(ds: DatasetTable, id: string, rawName: unknown, updatedBy: string): Promise<DatasetMetadataTable> {
    const row = await this.#find(ds.id, id);
    const name = await this.#checkName(ds.id, rawName);
    const set = { name, updated_by: updatedBy, updated_at: this.#clock.now() };
    try {
      await this.#store.rename(row.id, set);
    } catch (err) {
      if (await this.#store.nameTaken(ds.id, name)) throw invalidParam('Metadata name already exists.');
      throw err;
    }
    return { ...row, ...set };
  }

  /** Deletes a field and every document's value of it. */
  async delete(ds: DatasetTable, id: string): Promise<void> {
    const row = await this.#find(ds.id, id);
    await this.#store.delete(row.id);
  }

  /** Enables or disables the built-in fields (their values are computed when read). */
  async setBuiltIn(ds: DatasetTable, enabled: boolean): Promise<void> {
    await this.#datasets.update(ds.id, { built_in_field_enabled: enabled ? 1 : 0 });
  }

  /**
   * `POST /datasets/{id}/documents/metadata`: sets each listed document's values (replacing them
   * all, or only the listed fields with `partial_update`). Everything is checked before anything
   * changes, and the change is one transaction.
   */
  async updateDocuments(ds: DatasetTable, body: Record<string, unknown>, createdBy: string): Promise<void> {
    const raw = body.operation_data;
    if (!Array.isArray(raw)) throw invalidParam('operation_data is required and must be a list.');
    const fields = new Map((await this.fields(ds.id)).map((f) => [f.id, f]));
    const ops: Operation[] = raw.map((op: unknown, i) => {
      const at = `operation_data[${i}]`;
      if (typeof op !== 'object' || op === null || Array.isArray(op)) throw invalidParam(`${at} must be an object.`);
      const o = op as Record<string, unknown>;
      if (typeof o.document_id !== 'string' || o.document_id === '') throw invalidParam(`${at}.document_id is required.`);
      if (!Array.isArray(o.metadata_list)) throw invalidParam(`${at}.metadata_list is required and must be a list.`);
      if (o.partial_update !== undefined && o.partial_update !== null && typeof o.partial_update !== 'boolean') throw invalidParam(`${at}.partial_update must be a boolean.`);
      const values = new Map<string, MetadataValue>();
      o.metadata_list.forEach((item: unknown, j) => {
        const it = `${at}.metadata_list[${j}]`;
        if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalidParam(`${it} must be an object.`);
        const m = item as Record<string, unknown>;
        if (typeof m.id !== 'string' || m.id === '') throw invalidParam(`${it}.id is required.`);
        if (typeof m.name !== 'string') throw invalidParam(`${it}.name is required.`);
        const value = m.value === undefined ? null : m.value;
        if (!isValue(value)) throw invalidParam(`${it}.value must be a string, a number or null.`);
        if (!fields.has(m.id)) throw invalidParam(`${it}.id: Metadata not found.`);
        values.set(m.id, value);
      });
      return { documentId: o.document_id, values, partial: o.partial_update === true };
    });
    const ids = [...new Set(ops.map((o) => o.documentId))];
    const found = await this.#documents.existing(ds.id, ids);
    if (ids.some((id) => !found.has(id))) throw invalidParam('Document not found.');
    const now = this.#clock.now();
    await this.#db.transaction().execute(async (trx) => {
      // The document rows first, as a document delete takes its row first: a delete that committed
      // since the check above leaves a document missing here (and no values are written for it);
      // one that comes later waits for this transaction and then removes these values too.
      if ((await this.#documents.lock(trx, ds.id, ids)) !== ids.length) throw invalidParam('Document not found.');
      for (const op of ops) {
        await this.#store.setValues(trx, { datasetId: ds.id, documentId: op.documentId, values: op.values, partial: op.partial, createdBy, now });
      }
    });
  }

  /** Each document's `doc_metadata`: its custom values (field order), then the built-in fields when enabled. */
  async forDocuments(ds: DatasetTable, docs: readonly DocumentTable[]): Promise<Map<string, DocumentMetadataItem[]>> {
    const out = new Map<string, DocumentMetadataItem[]>();
    if (docs.length === 0) return out;
    for (const r of await this.#store.valuesOfDocuments(docs.map((d) => d.id))) {
      const list = out.get(r.documentId) ?? [];
      list.push({ id: r.fieldId, name: r.name, type: r.type, value: r.value });
      out.set(r.documentId, list);
    }
    if (ds.built_in_field_enabled === 1) {
      for (const d of docs) out.set(d.id, [...(out.get(d.id) ?? []), ...builtInValues(d)]);
    }
    return out;
  }

  /**
   * The served documents (enabled, not archived, with an indexed version) of these datasets whose
   * metadata passes `filter`: custom values by their field's current name, plus the built-in
   * values where the dataset has them enabled (as Dify's filter reads `documents.doc_metadata`).
   */
  async matchingDocuments(datasetIds: readonly string[], filter: MetadataFilter): Promise<Set<string>> {
    const out = new Set<string>();
    if (datasetIds.length === 0) return out;
    const docs = await this.#documents.served(datasetIds);
    if (docs.length === 0) return out;
    const builtIn = await this.#datasets.builtInEnabled(datasetIds);
    const byDoc = new Map<string, Map<string, MetadataValue>>();
    for (const v of await this.#store.valuesOfDatasets(datasetIds)) {
      const m = byDoc.get(v.documentId) ?? new Map<string, MetadataValue>();
      m.set(v.name, v.value);
      byDoc.set(v.documentId, m);
    }
    for (const d of docs) {
      const m = new Map(byDoc.get(d.id) ?? []);
      if (builtIn.has(d.dataset_id)) for (const b of builtInValues(d)) m.set(b.name, b.value);
      if (matchesFilter(filter, m)) out.add(d.id);
    }
    return out;
  }

  /**
   * Dify's `documents.doc_metadata` column for these documents of `ds`: field name → value (custom
   * values, then the built-in ones when enabled); documents with none are absent.
   */
  async docMetadataColumns(ds: DatasetTable, documentIds: readonly string[]): Promise<Map<string, Record<string, MetadataValue>>> {
    const out = new Map<string, Record<string, MetadataValue>>();
    if (documentIds.length === 0) return out;
    const docs = await this.#documents.findMany(ds.id, documentIds);
    for (const [id, items] of await this.forDocuments(ds, docs)) {
      if (items.length > 0) out.set(id, Object.fromEntries(items.map((m) => [m.name, m.value])));
    }
    return out;
  }

  /** Each dataset's `doc_metadata` field list (custom fields, then built-ins with id `built-in` when enabled). */
  async forDatasets(datasets: readonly DatasetTable[]): Promise<Map<string, { id: string; name: string; type: string }[]>> {
    const out = new Map<string, { id: string; name: string; type: string }[]>();
    if (datasets.length === 0) return out;
    const rows = await this.#store.fields(datasets.map((d) => d.id));
    for (const ds of datasets) {
      const own = rows.filter((r) => r.dataset_id === ds.id).map((r) => ({ id: r.id, name: r.name, type: r.type }));
      out.set(ds.id, ds.built_in_field_enabled === 1 ? [...own, ...BUILT_IN_FIELDS.map((f) => ({ id: 'built-in', name: f.name, type: f.type }))] : own);
    }
    return out;
  }
}
