import type { Kysely } from 'kysely';
import type { Database, DatasetPipelineTable } from '../../store/schema.js';

export type DatasetPipeline = DatasetPipelineTable;

/** Knowledge pipelines (`dataset_pipelines`): one per dataset filled by a pipeline. */
export class PipelineStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async insert(row: DatasetPipeline): Promise<void> {
    await this.#db.insertInto('dataset_pipelines').values(row).execute();
  }

  async ofDataset(datasetId: string): Promise<DatasetPipeline | undefined> {
    return this.#db.selectFrom('dataset_pipelines').selectAll().where('dataset_id', '=', datasetId).executeTakeFirst();
  }

  /** Pipeline ids by dataset id, for the datasets among `datasetIds` that have one. */
  async idsOf(datasetIds: readonly string[]): Promise<Map<string, string>> {
    if (datasetIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('dataset_pipelines').select(['id', 'dataset_id']).where('dataset_id', 'in', [...datasetIds]).execute();
    return new Map(rows.map((r) => [r.dataset_id, r.id]));
  }

  async replace(datasetId: string, change: Pick<DatasetPipeline, 'name' | 'dsl' | 'graph' | 'updated_at'>): Promise<boolean> {
    const r = await this.#db.updateTable('dataset_pipelines').set(change).where('dataset_id', '=', datasetId).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async deleteOfDataset(datasetId: string): Promise<void> {
    await this.#db.deleteFrom('dataset_pipelines').where('dataset_id', '=', datasetId).execute();
  }
}
