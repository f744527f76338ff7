import type { Kysely } from 'kysely';
import type { Database, DatasetMetadataTable } from '../../store/schema.js';
import type { MetadataValue } from '../retrieval/metadata-filter.js';
import { inBatches } from '../../store/statement-batches.js';

/** A custom metadata field of a dataset (the `dataset_metadata` row). */
export type MetadataField = DatasetMetadataTable;

/** One document's value of one field, with the field's current name and type. */
export interface FieldValue {
  readonly documentId: string;
  readonly fieldId: string;
  readonly name: string;
  readonly type: string;
  readonly value: MetadataValue;
}

/** Custom metadata fields of datasets (`dataset_metadata`) and their values on documents (`document_metadata_values`). */
export class MetadataStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async nameTaken(datasetId: string, name: string): Promise<boolean> {
    return (await this.#db.selectFrom('dataset_metadata').select('id').where('dataset_id', '=', datasetId).where('name', '=', name).executeTakeFirst()) !== undefined;
  }

  async find(datasetId: string, id: string): Promise<MetadataField | undefined> {
    return this.#db.selectFrom('dataset_metadata').selectAll().where('id', '=', id).where('dataset_id', '=', datasetId).executeTakeFirst();
  }

  /** The custom fields of these datasets, oldest first. */
  async fields(datasetIds: readonly string[]): Promise<MetadataField[]> {
    if (datasetIds.length === 0) return [];
    return this.#db.selectFrom('dataset_metadata').selectAll().where('dataset_id', 'in', [...datasetIds]).orderBy('created_at').orderBy('id').execute();
  }

  /** How many documents of the dataset have a value of each field (fields without any are absent). */
  async valueCounts(datasetId: string): Promise<Map<string, number>> {
    const rows = await this.#db
      .selectFrom('document_metadata_values')
      .select((eb) => ['metadata_id', eb.fn.countAll<number>().as('n')])
      .where('dataset_id', '=', datasetId)
      .groupBy('metadata_id')
      .execute();
    return new Map(rows.map((c) => [c.metadata_id, Number(c.n)]));
  }

  async insert(field: MetadataField): Promise<void> {
    await this.#db.insertInto('dataset_metadata').values(field).execute();
  }

  async rename(id: string, set: Pick<MetadataField, 'name' | 'updated_by' | 'updated_at'>): Promise<void> {
    await this.#db.updateTable('dataset_metadata').set(set).where('id', '=', id).execute();
  }

  /** Deletes a field and every document's value of it, in one transaction. */
  async delete(id: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('document_metadata_values').where('metadata_id', '=', id).execute();
      await trx.deleteFrom('dataset_metadata').where('id', '=', id).execute();
    });
  }

  /**
   * Sets a document's values inside the caller's transaction: replaces them all, or with
   * `partial` only the fields given.
   */
  async setValues(
    trx: Kysely<Database>,
    op: { datasetId: string; documentId: string; values: ReadonlyMap<string, MetadataValue>; partial: boolean; createdBy: string; now: number },
  ): Promise<void> {
    const del = trx.deleteFrom('document_metadata_values').where('document_id', '=', op.documentId);
    if (!op.partial) await del.execute();
    else for (const part of inBatches([...op.values.keys()])) await del.where('metadata_id', 'in', part).execute();
    // Six parameters a row.
    for (const part of inBatches([...op.values], 100)) {
      await trx
        .insertInto('document_metadata_values')
        .values(part.map(([metadataId, value]) => ({ document_id: op.documentId, metadata_id: metadataId, dataset_id: op.datasetId, value: JSON.stringify(value), created_by: op.createdBy, created_at: op.now })))
        .execute();
    }
  }

  /** The values of these documents, in field order. */
  async valuesOfDocuments(documentIds: readonly string[]): Promise<FieldValue[]> {
    if (documentIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('document_metadata_values as v')
      .innerJoin('dataset_metadata as m', 'm.id', 'v.metadata_id')
      .select(['v.document_id', 'v.value', 'm.id', 'm.name', 'm.type'])
      .where('v.document_id', 'in', [...new Set(documentIds)])
      .orderBy('m.created_at')
      .orderBy('m.id')
      .execute();
    return rows.map((r) => ({ documentId: r.document_id, fieldId: r.id, name: r.name, type: r.type, value: JSON.parse(r.value) as MetadataValue }));
  }

  /** Every value on documents of these datasets (any order). */
  async valuesOfDatasets(datasetIds: readonly string[]): Promise<FieldValue[]> {
    if (datasetIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('document_metadata_values as v')
      .innerJoin('dataset_metadata as m', 'm.id', 'v.metadata_id')
      .select(['v.document_id', 'v.value', 'm.id', 'm.name', 'm.type'])
      .where('v.dataset_id', 'in', [...datasetIds])
      .execute();
    return rows.map((r) => ({ documentId: r.document_id, fieldId: r.id, name: r.name, type: r.type, value: JSON.parse(r.value) as MetadataValue }));
  }

  /** Removes a document's values (inside the caller's transaction). */
  async deleteForDocument(db: Kysely<Database>, documentId: string): Promise<void> {
    await db.deleteFrom('document_metadata_values').where('document_id', '=', documentId).execute();
  }

  /** Removes a dataset's fields and values (inside the caller's transaction). */
  async deleteForDataset(db: Kysely<Database>, datasetId: string): Promise<void> {
    await db.deleteFrom('document_metadata_values').where('dataset_id', '=', datasetId).execute();
    await db.deleteFrom('dataset_metadata').where('dataset_id', '=', datasetId).execute();
  }
}
