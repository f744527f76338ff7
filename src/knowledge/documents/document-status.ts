import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';
import type { Clock } from '../../infra/clock.js';
import type { Queue } from '../../infra/queue/queue.js';
import { invalidParam } from '../../infra/errors.js';
import { documentIndexing, invalidAction } from '../errors.js';
import { INDEX_JOB, type DocumentService, type IndexJobPayload } from './documents.js';
import { DocumentStore, INDEXING_STATES, type DocumentChange } from './document-store.js';
import { IndexingRunStore } from '../ingest/indexing-run-store.js';

const STATUS_ACTIONS = ['enable', 'disable', 'archive', 'un_archive'];

/** Document state changes: enable / disable / archive / un-archive in batch, pause and resume of indexing. */
export class DocumentStatusService {
  readonly #db: Kysely<Database>;
  readonly #store: DocumentStore;
  readonly #runs: IndexingRunStore;
  readonly #clock: Clock;
  readonly #queue: Queue;
  readonly #documents: DocumentService;
  readonly #statusBatchMax: number;

  constructor(deps: {
    db: Kysely<Database>;
    clock: Clock;
    queue: Queue;
    documents: DocumentService;
    /** Most `document_ids` one status change takes. */
    statusBatchMax: number;
  }) {
    this.#db = deps.db;
    this.#store = new DocumentStore(deps.db);
    this.#runs = new IndexingRunStore(deps.db);
    this.#clock = deps.clock;
    this.#queue = deps.queue;
    this.#documents = deps.documents;
    this.#statusBatchMax = deps.statusBatchMax;
  }

  /**
   * Dify's batch status change (`enable`, `disable`, `archive`, `un_archive`). Unknown ids are
   * skipped and documents already in the target state are left alone, as in Dify; a document
   * still being indexed (or paused) refuses every action, and only a `completed` one can be
   * disabled. All checks pass before anything changes; the changes are one transaction.
   */
  async changeStatus(datasetId: string, action: string, rawIds: unknown, actorId: string): Promise<void> {
    if (!STATUS_ACTIONS.includes(action)) throw invalidAction('Invalid action.');
    if (!Array.isArray(rawIds) || rawIds.some((id) => typeof id !== 'string')) throw invalidParam('document_ids is required and must be a list of strings.');
    if (rawIds.length > this.#statusBatchMax) throw invalidParam(`document_ids must have at most ${this.#statusBatchMax} items.`);
    const ids = [...new Set(rawIds as string[])];
    if (ids.length === 0) return;
    const docs = await this.#store.findMany(datasetId, ids);
    for (const d of docs) {
      if (INDEXING_STATES.includes(d.indexing_status)) throw invalidAction(`Document:${d.name} is being indexed, please try again later`);
      if (action === 'disable' && d.indexing_status !== 'completed') throw invalidAction(`Document: ${d.name} is not completed.`);
    }
    const now = this.#clock.now();
    const set: DocumentChange =
      action === 'enable'
        ? { enabled: 1, disabled_at: null, disabled_by: null }
        : action === 'disable'
          ? { enabled: 0, disabled_at: now, disabled_by: actorId }
          : { archived: action === 'archive' ? 1 : 0 };
    const [column, target] = action === 'enable' || action === 'disable' ? (['enabled', action === 'enable' ? 1 : 0] as const) : (['archived', action === 'archive' ? 1 : 0] as const);
    const change = docs.filter((d) => d[column] !== target).map((d) => d.id);
    if (change.length === 0) return;
    await this.#store.setFlags(change, { ...set, updated_at: now }, column, target);
  }

  /**
   * Pauses the indexing of a document's latest version (Dify's console `…/processing/pause`):
   * the run and the document report `paused` with `paused_at`; the run's owner is cleared, so an
   * execution in progress stops at its next stage or batch (the batch in flight is rolled back)
   * and a queued one does nothing. Committed batches are kept for the resume.
   */
  async pause(datasetId: string, documentId: string): Promise<void> {
    const doc = await this.#documents.get(datasetId, documentId);
    const now = this.#clock.now();
    const paused = await this.#db.transaction().execute(async (trx) => {
      const runId = `${doc.id}:${doc.latest_generation}`;
      const from = ['waiting', 'parsing', 'cleaning', 'splitting', 'indexing'] as const;
      if (!(await this.#runs.transition(trx, runId, from, { status: 'paused', paused_at: now, updated_at: now }))) return false;
      await this.#store.setLatestStatus(trx, doc.id, doc.latest_generation, { indexing_status: 'paused', updated_at: now });
      return true;
    });
    if (!paused) throw documentIndexing('Cannot pause completed document.');
  }

  /** Resumes a paused document: its run waits for a worker again and continues after its last committed batch. */
  async resume(datasetId: string, documentId: string): Promise<void> {
    const doc = await this.#documents.get(datasetId, documentId);
    const now = this.#clock.now();
    const runId = `${doc.id}:${doc.latest_generation}`;
    const resumed = await this.#db.transaction().execute(async (trx) => {
      if (!(await this.#runs.transition(trx, runId, ['paused'], { status: 'waiting', paused_at: null, updated_at: now }))) return false;
      await this.#store.setLatestStatus(trx, doc.id, doc.latest_generation, { indexing_status: 'waiting', updated_at: now });
      await this.#queue.enqueue(INDEX_JOB, { runId } satisfies IndexJobPayload, { tx: trx });
      return true;
    });
    if (!resumed) throw documentIndexing('Document is not in paused status.');
    this.#queue.notify();
  }
}
