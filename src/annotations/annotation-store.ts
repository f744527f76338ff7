import type { Kysely } from 'kysely';
import type { Database, Executor } from '../store/schema.js';
import { inBatches } from '../store/statement-batches.js';
import { containsIgnoringCase } from '../store/like.js';


export const JOB_STATUSES = ['waiting', 'processing', 'completed', 'error'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface Annotation {
  readonly id: string;
  readonly question: string;
  readonly answer: string;
  readonly hitCount: number;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** An annotation with what the store keeps besides the wire fields. */
export interface StoredAnnotation extends Annotation {
  readonly appId: string;
  readonly accountId: string | null;
  /** The message it corrects, when made from one ("improve this answer"). */
  readonly messageId: string | null;
  readonly conversationId: string | null;
}

/** One reply an annotation gave (a row of `annotation_hit_histories`). */
export interface HitHistory {
  readonly id: string;
  readonly messageId: string;
  readonly endUserId: string;
  /** The query that matched. */
  readonly question: string;
  readonly source: string;
  readonly score: number;
  /** The annotation's question and answer as they were when it answered. */
  readonly annotationQuestion: string;
  readonly annotationContent: string;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** A new annotation's fields. */
export interface NewAnnotation {
  readonly id: string;
  readonly appId: string;
  readonly question: string;
  readonly answer: string;
  readonly now: number;
  readonly accountId?: string | null;
  readonly messageId?: string | null;
  readonly conversationId?: string | null;
}

/** Reply setting as the enable job writes it. */
export interface ReplySetting {
  readonly scoreThreshold: number;
  readonly provider: string;
  readonly model: string;
}

/** An enable or disable job. */
export interface AnnotationJob extends ReplySetting {
  readonly id: string;
  readonly appId: string;
  readonly action: string;
  readonly status: JobStatus;
  readonly errorMsg: string;
  /** Epoch ms. */
  readonly createdAt: number;
}

/** An annotation's stored embedding key: the model and the question it was made from. */
export interface EmbeddingKey {
  readonly annotationId: string;
  readonly model: string;
  readonly question: string;
}

/** A hit as the answer-time match records it. */
export interface AnnotationHit {
  readonly appId: string;
  readonly annotationId: string;
  readonly messageId: string;
  readonly endUserId: string;
  /** The query that matched. */
  readonly query: string;
  readonly score: number;
  readonly annotationQuestion: string;
  readonly annotationContent: string;
}


type AnnotationRow = { id: string; app_id: string; question: string; content: string; hit_count: number; account_id: string | null; message_id?: string | null; conversation_id?: string | null; created_at: number };

const toAnnotation = (r: AnnotationRow): StoredAnnotation => ({
  id: r.id,
  appId: r.app_id,
  question: r.question,
  answer: r.content,
  hitCount: Number(r.hit_count),
  accountId: r.account_id,
  messageId: r.message_id ?? null,
  conversationId: r.conversation_id ?? null,
  createdAt: Number(r.created_at),
});

const rowOf = (a: NewAnnotation) => ({
  id: a.id,
  app_id: a.appId,
  question: a.question,
  content: a.answer,
  hit_count: 0,
  account_id: a.accountId ?? null,
  message_id: a.messageId ?? null,
  conversation_id: a.conversationId ?? null,
  created_at: a.now,
  updated_at: a.now,
});

const toJob = (r: { id: string; app_id: string; action: string; status: string; error_msg: string; score_threshold: number; embedding_provider: string; embedding_model: string; created_at: number }): AnnotationJob => ({
  id: r.id,
  appId: r.app_id,
  action: r.action,
  status: r.status as JobStatus,
  errorMsg: r.error_msg,
  scoreThreshold: Number(r.score_threshold),
  provider: r.embedding_provider,
  model: r.embedding_model,
  createdAt: Number(r.created_at),
});

/**
 * The annotation tables: `app_annotations`, their hit history, the reply jobs, the reply setting
 * and the annotations' embeddings. Methods that take `ex` run on the caller's transaction.
 */
export class AnnotationStore {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  // --- annotations ---

  /** A page, newest first (`created_at` desc, then insertion order desc); `keyword` matches question or answer, case-insensitively. */
  async list(appId: string, q: { keyword: string; limit: number; offset: number }): Promise<{ items: StoredAnnotation[]; total: number }> {
    let base = this.#db.selectFrom('app_annotations').where('app_id', '=', appId);
    const keyword = q.keyword;
    if (keyword) base = base.where((eb) => eb.or([containsIgnoringCase('question', keyword), containsIgnoringCase('content', keyword)]));
    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('seq', 'desc').limit(q.limit).offset(q.offset).execute();
    return { items: rows.map(toAnnotation), total: Number(total) };
  }

  async find(appId: string, id: string): Promise<StoredAnnotation | undefined> {
    const r = await this.#db.selectFrom('app_annotations').selectAll().where('id', '=', id).where('app_id', '=', appId).executeTakeFirst();
    return r && toAnnotation(r);
  }

  async insert(a: NewAnnotation): Promise<StoredAnnotation> {
    const row = rowOf(a);
    await this.#db.insertInto('app_annotations').values(row).execute();
    return toAnnotation(row);
  }

  /**
   * The annotation of a message: a new one, or the message's earlier one with this question and
   * answer (the unique `(app_id, message_id)` settles two writes at once). Returns the row as stored.
   */
  async upsertForMessage(a: NewAnnotation & { messageId: string }): Promise<StoredAnnotation> {
    const row = rowOf(a);
    await this.#db
      .insertInto('app_annotations')
      .values(row)
      .onConflict((oc) => oc.columns(['app_id', 'message_id']).doUpdateSet({ question: a.question, content: a.answer, updated_at: a.now }))
      .execute();
    const stored = await this.#db.selectFrom('app_annotations').selectAll().where('app_id', '=', a.appId).where('message_id', '=', a.messageId).executeTakeFirstOrThrow();
    return toAnnotation(stored);
  }

  /** The annotation made from this message, if any. */
  async findByMessage(appId: string, messageId: string): Promise<StoredAnnotation | undefined> {
    const r = await this.#db.selectFrom('app_annotations').selectAll().where('app_id', '=', appId).where('message_id', '=', messageId).executeTakeFirst();
    return r && toAnnotation(r);
  }

  /** Inserts many annotations in one transaction, in statements of a bounded size (an import). */
  async insertMany(rows: readonly NewAnnotation[]): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      for (const batch of inBatches(rows.map(rowOf), 200)) await tx.insertInto('app_annotations').values(batch).execute();
    });
  }

  /** The app's newest `limit` annotations (the order of `list`): an export. */
  async newest(appId: string, limit: number): Promise<StoredAnnotation[]> {
    const rows = await this.#db.selectFrom('app_annotations').selectAll().where('app_id', '=', appId).orderBy('created_at', 'desc').orderBy('seq', 'desc').limit(limit).execute();
    return rows.map(toAnnotation);
  }

  /** How many annotations the app has. */
  async count(appId: string): Promise<number> {
    const { n } = await this.#db.selectFrom('app_annotations').select((eb) => eb.fn.countAll<number>().as('n')).where('app_id', '=', appId).executeTakeFirstOrThrow();
    return Number(n);
  }

  async update(id: string, question: string, answer: string, now: number): Promise<void> {
    await this.#db.updateTable('app_annotations').set({ question, content: answer, updated_at: now }).where('id', '=', id).execute();
  }

  /** Deletes the annotation, its hit history and its embedding, in one transaction. */
  async delete(id: string): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      await tx.deleteFrom('annotation_hit_histories').where('annotation_id', '=', id).execute();
      await tx.deleteFrom('annotation_embeddings').where('annotation_id', '=', id).execute();
      await tx.deleteFrom('app_annotations').where('id', '=', id).execute();
    });
  }

  /** The app's annotations, id and question (what the embeddings are made from). */
  async questions(appId: string): Promise<{ id: string; question: string }[]> {
    return this.#db.selectFrom('app_annotations').select(['id', 'question']).where('app_id', '=', appId).execute();
  }

  /** An annotation's current question, read in `ex`. */
  async questionOf(ex: Executor, id: string): Promise<string | undefined> {
    const r = await ex.selectFrom('app_annotations').select('question').where('id', '=', id).executeTakeFirst();
    return r?.question;
  }

  /** Records a hit: the annotation's `hit_count` + 1 and a hit history row, in one transaction. */
  async recordHit(h: AnnotationHit & { id: string; now: number }): Promise<void> {
    await this.#db.transaction().execute(async (tx) => {
      await tx.updateTable('app_annotations').set((eb) => ({ hit_count: eb('hit_count', '+', 1) })).where('id', '=', h.annotationId).execute();
      await tx
        .insertInto('annotation_hit_histories')
        .values({
          id: h.id,
          app_id: h.appId,
          annotation_id: h.annotationId,
          message_id: h.messageId,
          end_user_id: h.endUserId,
          question: h.query,
          source: 'api',
          score: h.score,
          annotation_question: h.annotationQuestion,
          annotation_content: h.annotationContent,
          created_at: h.now,
        })
        .execute();
    });
  }

  /** An annotation's hits, newest first, by page. */
  async hitHistories(annotationId: string, q: { limit: number; offset: number }): Promise<{ items: HitHistory[]; total: number }> {
    const base = this.#db.selectFrom('annotation_hit_histories').where('annotation_id', '=', annotationId);
    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute();
    return {
      total: Number(total),
      items: rows.map((r) => ({
        id: r.id,
        messageId: r.message_id,
        endUserId: r.end_user_id,
        question: r.question,
        source: r.source,
        score: Number(r.score),
        annotationQuestion: r.annotation_question,
        annotationContent: r.annotation_content,
        createdAt: Number(r.created_at),
      })),
    };
  }

  /** How many hits an annotation has on record (hit history rows). */
  async hitHistoryCount(annotationId: string): Promise<number> {
    const { n } = await this.#db.selectFrom('annotation_hit_histories').select((eb) => eb.fn.countAll<number>().as('n')).where('annotation_id', '=', annotationId).executeTakeFirstOrThrow();
    return Number(n);
  }

  // --- reply jobs ---

  /** The id of the app's unfinished job of this action, read in `ex`. */
  async openJobId(ex: Executor, appId: string, action: string): Promise<string | undefined> {
    const r = await ex.selectFrom('annotation_jobs').select('id').where('app_id', '=', appId).where('action', '=', action).where('status', 'in', ['waiting', 'processing']).executeTakeFirst();
    return r?.id;
  }

  /** Inserts a `waiting` job in `ex`. */
  async insertJob(ex: Executor, j: { id: string; appId: string; action: string; setting: ReplySetting; now: number }): Promise<void> {
    await ex
      .insertInto('annotation_jobs')
      .values({ id: j.id, app_id: j.appId, action: j.action, status: 'waiting', error_msg: '', score_threshold: j.setting.scoreThreshold, embedding_provider: j.setting.provider, embedding_model: j.setting.model, created_at: j.now, updated_at: j.now })
      .execute();
  }

  /** A job by id; with `of`, only when it belongs to that app and action. */
  async job(id: string, of?: { appId: string; action: string }): Promise<AnnotationJob | undefined> {
    let q = this.#db.selectFrom('annotation_jobs').selectAll().where('id', '=', id);
    if (of) q = q.where('app_id', '=', of.appId).where('action', '=', of.action);
    const r = await q.executeTakeFirst();
    return r && toJob(r);
  }

  /** The app's newest enable or disable job. */
  async latestJob(appId: string): Promise<AnnotationJob | undefined> {
    const r = await this.#db.selectFrom('annotation_jobs').selectAll().where('app_id', '=', appId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    return r && toJob(r);
  }

  /** A `waiting` job becomes `processing`. */
  async markProcessing(id: string, now: number): Promise<void> {
    await this.#db.updateTable('annotation_jobs').set({ status: 'processing', updated_at: now }).where('id', '=', id).where('status', '=', 'waiting').execute();
  }

  /** Whether the job's app has a job of the other action made after it, read in `ex`. */
  async hasLaterOtherAction(ex: Executor, job: AnnotationJob): Promise<boolean> {
    const r = await ex.selectFrom('annotation_jobs').select('id').where('app_id', '=', job.appId).where('action', '!=', job.action).where('created_at', '>', job.createdAt).executeTakeFirst();
    return r !== undefined;
  }

  /** An unfinished job ends `completed` or `error`; a finished one is left as it is. */
  async finishJob(ex: Executor, id: string, status: 'completed' | 'error', errorMsg: string, now: number): Promise<void> {
    await ex.updateTable('annotation_jobs').set({ status, error_msg: errorMsg, updated_at: now }).where('id', '=', id).where('status', 'in', ['waiting', 'processing']).execute();
  }

  // --- reply setting ---

  /** The app's reply setting (present exactly while reply is enabled), read in `ex` when given. */
  async setting(appId: string, ex: Executor = this.#db): Promise<ReplySetting | undefined> {
    const r = await ex.selectFrom('app_annotation_settings').selectAll().where('app_id', '=', appId).executeTakeFirst();
    return r && { scoreThreshold: Number(r.score_threshold), provider: r.embedding_provider, model: r.embedding_model };
  }

  async saveSetting(ex: Executor, appId: string, s: ReplySetting, now: number): Promise<void> {
    await ex
      .insertInto('app_annotation_settings')
      .values({ app_id: appId, score_threshold: s.scoreThreshold, embedding_provider: s.provider, embedding_model: s.model, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('app_id').doUpdateSet({ score_threshold: s.scoreThreshold, embedding_provider: s.provider, embedding_model: s.model, updated_at: now }))
      .execute();
  }

  async deleteSetting(ex: Executor, appId: string): Promise<void> {
    await ex.deleteFrom('app_annotation_settings').where('app_id', '=', appId).execute();
  }

  // --- embeddings ---

  /** What each of the app's embeddings was made from. */
  async embeddingKeys(appId: string): Promise<EmbeddingKey[]> {
    const rows = await this.#db.selectFrom('annotation_embeddings').select(['annotation_id', 'model', 'question']).where('app_id', '=', appId).execute();
    return rows.map((r) => ({ annotationId: r.annotation_id, model: r.model, question: r.question }));
  }

  /** Writes (or replaces) an annotation's embedding in `ex`; `embedding` is base64 of little-endian float32. */
  async saveEmbedding(ex: Executor, e: EmbeddingKey & { appId: string; dims: number; embedding: string }): Promise<void> {
    const row = { annotation_id: e.annotationId, app_id: e.appId, model: e.model, question: e.question, dims: e.dims, embedding: e.embedding };
    await ex
      .insertInto('annotation_embeddings')
      .values(row)
      .onConflict((oc) => oc.column('annotation_id').doUpdateSet({ model: row.model, question: row.question, dims: row.dims, embedding: row.embedding }))
      .execute();
  }

  async deleteEmbeddings(ex: Executor, annotationIds: readonly string[]): Promise<void> {
    for (const ids of inBatches(annotationIds)) await ex.deleteFrom('annotation_embeddings').where('annotation_id', 'in', ids).execute();
  }

  async deleteEmbeddingsOfApp(ex: Executor, appId: string): Promise<void> {
    await ex.deleteFrom('annotation_embeddings').where('app_id', '=', appId).execute();
  }

  /**
   * The app's annotations that have an embedding under `model` made from their current question,
   * oldest first (then by id).
   */
  async embedded(appId: string, model: string): Promise<StoredAnnotation[]> {
    const rows = await this.#db
      .selectFrom('annotation_embeddings as e')
      .innerJoin('app_annotations as a', (j) => j.onRef('a.id', '=', 'e.annotation_id').onRef('a.question', '=', 'e.question'))
      .select(['a.id', 'a.app_id', 'a.question', 'a.content', 'a.hit_count', 'a.account_id', 'a.created_at'])
      .where('e.app_id', '=', appId)
      .where('e.model', '=', model)
      .orderBy('a.created_at', 'asc')
      .orderBy('a.id', 'asc')
      .execute();
    return rows.map(toAnnotation);
  }

  /** How many of the app's annotations have an embedding under `model` made from their current question. */
  async embeddedCount(appId: string, model: string): Promise<number> {
    const { n } = await this.#db
      .selectFrom('annotation_embeddings as e')
      .innerJoin('app_annotations as a', (j) => j.onRef('a.id', '=', 'e.annotation_id').onRef('a.question', '=', 'e.question'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('e.app_id', '=', appId)
      .where('e.model', '=', model)
      .executeTakeFirstOrThrow();
    return Number(n);
  }

  /** The stored vectors (base64) of these annotations under `model`, with the question each was made from. */
  async embeddings(model: string, annotationIds: readonly string[]): Promise<{ annotationId: string; question: string; embedding: string }[]> {
    const out: { annotationId: string; question: string; embedding: string }[] = [];
    for (const ids of inBatches(annotationIds)) {
      const rows = await this.#db.selectFrom('annotation_embeddings').select(['annotation_id', 'question', 'embedding']).where('annotation_id', 'in', ids).where('model', '=', model).execute();
      for (const r of rows) out.push({ annotationId: r.annotation_id, question: r.question, embedding: r.embedding });
    }
    return out;
  }

  /** Deletes an app's annotations with their hit history, embeddings, jobs and reply settings (`app delete --purge`). */
  async purgeApp(appId: string): Promise<void> {
    await this.#db.deleteFrom('annotation_hit_histories').where('app_id', '=', appId).execute();
    await this.#db.deleteFrom('annotation_embeddings').where('app_id', '=', appId).execute();
    await this.#db.deleteFrom('annotation_jobs').where('app_id', '=', appId).execute();
    await this.#db.deleteFrom('app_annotations').where('app_id', '=', appId).execute();
    await this.#db.deleteFrom('app_annotation_settings').where('app_id', '=', appId).execute();
  }
}
