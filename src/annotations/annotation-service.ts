import { sql, type Kysely, type Selectable } from 'kysely';
import type { App } from '../apps/app-service.js';
import type { Clock } from '../infra/clock.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { newId, isUuid } from '../infra/ids.js';
import type { Logger } from '../infra/logger.js';
import type { JobContext, Queue } from '../infra/queue/queue.js';
import type { AppAnnotationTable, Database } from '../store/schema.js';
import type { AnnotationIndex, AnnotationMatch } from './annotation-index.js';
import type { EmbeddingModels } from './embedding-models.js';
import { REPLY_JOB, SYNC_JOB, type ReplyJobPayload, type SyncJobPayload } from './annotation-job-kinds.js';

export const REPLY_ACTIONS = ['enable', 'disable'] as const;
export type ReplyAction = (typeof REPLY_ACTIONS)[number];
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

export interface ReplySettingsInput {
  readonly scoreThreshold: number;
  readonly provider: string;
  readonly model: string;
}

function toAnnotation(r: Omit<Selectable<AppAnnotationTable>, 'seq'>): Annotation {
  return { id: r.id, question: r.question, answer: r.content, hitCount: Number(r.hit_count), createdAt: Number(r.created_at) };
}

/** `%`, `_` and `\` match themselves in a LIKE pattern with `ESCAPE '\'`. */
function likePattern(keyword: string): string {
  return `%${keyword.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export interface AnnotationDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly queue: Queue;
  readonly index: AnnotationIndex;
  readonly models: EmbeddingModels;
  readonly listMaxLimit: number;
  /** Longest question (and longest query matched), in characters. */
  readonly questionMaxChars: number;
  /** Longest wait for a match at answer time, ms. */
  readonly matchTimeoutMs: number;
}

/** A reply job whose app saw a later request of the other action: it writes nothing. */
class Superseded extends Error {}

/** The longest `embedding_model_name` / `embedding_provider_name` accepted. */
const MODEL_NAME_MAX = 255;

/**
 * An app's annotations and annotation reply (Dify's `AppAnnotationService`): CRUD, the
 * enable/disable jobs on the durable queue, and the answer-time match with its hit record.
 */
export class AnnotationService {
  readonly #d: AnnotationDeps;

  constructor(deps: AnnotationDeps) {
    this.#d = deps;
  }

  /**
   * Newest first (`created_at` desc, then insertion order desc); `keyword` matches question or answer,
   * case-insensitively. A `limit` above `ANNOTATION_LIST_MAX_LIMIT` is served that many (as Dify).
   */
  async list(app: App, q: { page: number; limit: number; keyword: string }): Promise<{ items: Annotation[]; total: number; perPage: number }> {
    const perPage = Math.min(q.limit, this.#d.listMaxLimit);
    let base = this.#d.db.selectFrom('app_annotations').where('app_id', '=', app.id);
    if (q.keyword) {
      const pat = likePattern(q.keyword);
      // SQLite's LIKE has no escape character unless one is named; PostgreSQL accepts the same clause.
      base = base.where(sql<boolean>`(lower(question) LIKE ${pat} ESCAPE '\\' OR lower(content) LIKE ${pat} ESCAPE '\\')`);
    }
    const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
    const rows = await base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('seq', 'desc')
      .limit(perPage)
      .offset((q.page - 1) * perPage)
      .execute();
    return { items: rows.map(toAnnotation), total: Number(total), perPage };
  }

  #checkQuestion(question: string): void {
    const max = this.#d.questionMaxChars;
    if (question.length > max) throw invalidParam(`question must be at most ${max} characters (ANNOTATION_QUESTION_MAX_CHARS)`);
  }

  async create(app: App, input: { question: string; answer: string }): Promise<Annotation> {
    this.#checkQuestion(input.question);
    const now = this.#d.clock.now();
    const row: Omit<Selectable<AppAnnotationTable>, 'seq'> = { id: newId(), app_id: app.id, question: input.question, content: input.answer, hit_count: 0, account_id: null, created_at: now, updated_at: now };
    await this.#d.db.insertInto('app_annotations').values(row).execute();
    await this.#afterEdit(app.id);
    return toAnnotation(row);
  }

  async update(app: App, id: string, input: { question: string; answer: string }): Promise<Annotation> {
    this.#checkQuestion(input.question);
    const found = await this.#find(app.id, id);
    await this.#d.db
      .updateTable('app_annotations')
      .set({ question: input.question, content: input.answer, updated_at: this.#d.clock.now() })
      .where('id', '=', found.id)
      .execute();
    await this.#afterEdit(app.id);
    return { ...toAnnotation(found), question: input.question, answer: input.answer };
  }

  /** Deletes the annotation, its hit history and its embedding. */
  async delete(app: App, id: string): Promise<void> {
    const found = await this.#find(app.id, id);
    await this.#d.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('annotation_hit_histories').where('annotation_id', '=', found.id).execute();
      await tx.deleteFrom('annotation_embeddings').where('annotation_id', '=', found.id).execute();
      await tx.deleteFrom('app_annotations').where('id', '=', found.id).execute();
    });
  }

  async #find(appId: string, id: string): Promise<Selectable<AppAnnotationTable>> {
    const row = isUuid(id) ? await this.#d.db.selectFrom('app_annotations').selectAll().where('id', '=', id).where('app_id', '=', appId).executeTakeFirst() : undefined;
    if (!row) throw notFound('Annotation not found');
    return row;
  }

  /** While reply is enabled, an edit queues a sync of the app's embeddings. */
  async #afterEdit(appId: string): Promise<void> {
    if (await this.#d.index.setting(appId)) await this.#d.queue.enqueue(SYNC_JOB, { appId } satisfies SyncJobPayload);
  }

  /**
   * Starts an enable or disable job, or answers the app's unfinished job of that action with
   * `processing` (as Dify). Enabling checks the embedding model first (400 when it cannot be served).
   */
  async startReplyJob(app: App, action: string, s: ReplySettingsInput): Promise<{ jobId: string; status: JobStatus }> {
    if (!(REPLY_ACTIONS as readonly string[]).includes(action)) throw invalidParam(`Unsupported annotation reply action: action must be one of ${REPLY_ACTIONS.join(', ')}`);
    if (!Number.isFinite(s.scoreThreshold) || s.scoreThreshold < 0 || s.scoreThreshold > 1) throw invalidParam('score_threshold must be a number from 0 to 1');
    for (const [field, v] of [['embedding_provider_name', s.provider], ['embedding_model_name', s.model]] as const) {
      if (v.length > MODEL_NAME_MAX) throw invalidParam(`${field} must be at most ${MODEL_NAME_MAX} characters`);
    }
    if (action === 'enable') this.#d.models.check(s.provider, s.model);
    const d = this.#d;
    return d.db.transaction().execute(async (tx) => {
      const open = await tx
        .selectFrom('annotation_jobs')
        .select('id')
        .where('app_id', '=', app.id)
        .where('action', '=', action)
        .where('status', 'in', ['waiting', 'processing'])
        .executeTakeFirst();
      if (open) return { jobId: open.id, status: 'processing' as const };
      const now = d.clock.now();
      const jobId = newId();
      await tx
        .insertInto('annotation_jobs')
        .values({ id: jobId, app_id: app.id, action, status: 'waiting', error_msg: '', score_threshold: s.scoreThreshold, embedding_provider: s.provider, embedding_model: s.model, created_at: now, updated_at: now })
        .execute();
      await d.queue.enqueue(REPLY_JOB, { jobId } satisfies ReplyJobPayload, { tx, maxAttempts: 1 });
      return { jobId, status: 'waiting' as const };
    }).finally(() => d.queue.notify());
  }

  /** A job of this app and action, or 400 `The job does not exist.` (as Dify). */
  async jobStatus(app: App, action: string, jobId: string): Promise<{ jobId: string; status: JobStatus; errorMsg: string }> {
    const row = isUuid(jobId)
      ? await this.#d.db.selectFrom('annotation_jobs').selectAll().where('id', '=', jobId).where('app_id', '=', app.id).where('action', '=', action).executeTakeFirst()
      : undefined;
    if (!row) throw invalidParam('The job does not exist.');
    return { jobId: row.id, status: row.status as JobStatus, errorMsg: row.status === 'error' ? row.error_msg : '' };
  }

  /** The job handler: idempotent; a finished job is left as it is. */
  async runReplyJob(jobId: string, ctx: JobContext): Promise<void> {
    const d = this.#d;
    const job = await d.db.selectFrom('annotation_jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    if (!job || job.status === 'completed' || job.status === 'error') return;
    await d.db.updateTable('annotation_jobs').set({ status: 'processing', updated_at: d.clock.now() }).where('id', '=', jobId).where('status', '=', 'waiting').execute();
    // Requests apply in the order they were made: a job whose app has a later request of the other
    // action (a disable sent while an enable embeds, say) writes nothing when it commits.
    const complete = async (tx: Kysely<Database>) => {
      const later = await tx
        .selectFrom('annotation_jobs')
        .select('id')
        .where('app_id', '=', job.app_id)
        .where('action', '!=', job.action)
        .where('created_at', '>', job.created_at)
        .executeTakeFirst();
      if (later) throw new Superseded();
      await this.#finishJob(tx, jobId, 'completed', '');
    };
    try {
      if (job.action === 'enable') {
        await d.index.enable(job.app_id, { scoreThreshold: Number(job.score_threshold), provider: job.embedding_provider, model: job.embedding_model }, complete, ctx.signal);
      } else {
        await d.index.disable(job.app_id, complete);
      }
    } catch (err) {
      if (err instanceof Superseded) return this.#finishJob(d.db, jobId, 'completed', '');
      if (ctx.signal.aborted) throw err;
      const message = err instanceof Error ? err.message : String(err);
      d.logger.warn({ err, jobId }, 'annotation reply job failed');
      await this.#finishJob(d.db, jobId, 'error', message);
    }
  }

  /** The queue gave up on the job: it ends `error` with the queue's message. */
  async failReplyJob(jobId: string, error: string): Promise<void> {
    await this.#finishJob(this.#d.db, jobId, 'error', error);
  }

  async #finishJob(db: Kysely<Database>, jobId: string, status: 'completed' | 'error', errorMsg: string): Promise<void> {
    await db.updateTable('annotation_jobs').set({ status, error_msg: errorMsg, updated_at: this.#d.clock.now() }).where('id', '=', jobId).where('status', 'in', ['waiting', 'processing']).execute();
  }

  /**
   * The annotation that answers `query` for this app, when reply is enabled and one scores at
   * least the threshold. A failing lookup (embedding endpoint down) answers `undefined`, as Dify,
   * so the model answers instead.
   */
  async match(appId: string, query: string, signal?: AbortSignal): Promise<AnnotationMatch | undefined> {
    // A query longer than any question can be is not matched: embedding it would only cost time.
    if (!query || query.length > this.#d.questionMaxChars) return undefined;
    const timeout = AbortSignal.timeout(this.#d.matchTimeoutMs);
    try {
      return await this.#d.index.match(appId, query, signal ? AbortSignal.any([signal, timeout]) : timeout);
    } catch (err) {
      this.#d.logger.warn({ err, appId }, 'annotation reply lookup failed');
      return undefined;
    }
  }

  /** Records a hit: the annotation's `hit_count` + 1 and a hit history row, in one transaction. */
  async recordHit(h: { appId: string; match: AnnotationMatch; query: string; messageId: string; endUserId: string }): Promise<void> {
    await this.#d.db.transaction().execute(async (tx) => {
      await tx.updateTable('app_annotations').set((eb) => ({ hit_count: eb('hit_count', '+', 1) })).where('id', '=', h.match.id).execute();
      await tx
        .insertInto('annotation_hit_histories')
        .values({
          id: newId(),
          app_id: h.appId,
          annotation_id: h.match.id,
          message_id: h.messageId,
          end_user_id: h.endUserId,
          question: h.query,
          source: 'api',
          score: h.match.score,
          annotation_question: h.match.question,
          annotation_content: h.match.content,
          created_at: this.#d.clock.now(),
        })
        .execute();
    });
  }
}

/** An annotation on the wire (Dify's `annotation_fields`). */
export function annotationItem(a: Annotation): Record<string, unknown> {
  return { id: a.id, question: a.question, answer: a.answer, hit_count: a.hitCount, created_at: Math.floor(a.createdAt / 1000) };
}
