import type { Kysely } from 'kysely';
import type { App } from '../apps/app-service.js';
import type { Clock } from '../infra/clock.js';
import { invalidParam, notFound } from '../infra/errors.js';
import { newId, isUuid } from '../infra/ids.js';
import type { Logger } from '../infra/logger.js';
import type { JobContext, Queue } from '../infra/queue/queue.js';
import type { Database } from '../store/schema.js';
import type { AnnotationIndex, AnnotationMatch } from './annotation-index.js';
import { AnnotationStore, JOB_STATUSES, type Annotation, type AnnotationJob, type JobStatus, type StoredAnnotation } from './annotation-store.js';
import type { EmbeddingModels } from './embedding-models.js';
import { CsvRowError, formatAnnotationCsv, parseAnnotationCsv } from './annotation-csv.js';
import type { HitHistory } from './annotation-store.js';
import { REPLY_JOB, SYNC_JOB, type ReplyJobPayload, type SyncJobPayload } from './annotation-job-kinds.js';

export const REPLY_ACTIONS = ['enable', 'disable'] as const;
export type ReplyAction = (typeof REPLY_ACTIONS)[number];
export { JOB_STATUSES };
export type { Annotation, JobStatus, HitHistory };

/** What an annotation made from a message needs of it (the messages domain answers, wired by the composition root). */
export interface AnnotatedMessage {
  readonly appId: string;
  readonly query: string;
  readonly answer: string;
  readonly conversationId: string | null;
}

/** The reply setting as the console shows it, with the newest job and how far its embeddings are. */
export interface ReplyStatus {
  readonly enabled: boolean;
  readonly scoreThreshold: number | null;
  readonly provider: string | null;
  readonly model: string | null;
  /** The newest enable or disable job, if any. */
  readonly job: { readonly id: string; readonly action: string; readonly status: JobStatus; readonly errorMsg: string } | null;
  /** Annotations embedded with the enabled model from their current question, of `total` (0 of n while disabled). */
  readonly embedded: number;
  readonly total: number;
}

export interface ReplySettingsInput {
  readonly scoreThreshold: number;
  readonly provider: string;
  readonly model: string;
}

/** The wire fields of a stored annotation. */
const toAnnotation = (a: StoredAnnotation): Annotation => ({ id: a.id, question: a.question, answer: a.answer, hitCount: a.hitCount, createdAt: a.createdAt });

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
  /** A message by id (for "improve this answer"). */
  readonly findMessage: (id: string) => Promise<AnnotatedMessage | undefined>;
  /** Most annotations one CSV import takes (`ANNOTATION_IMPORT_MAX_RECORDS`). */
  readonly importMaxRecords: number;
  /** Largest CSV file one import takes, bytes (`ANNOTATION_IMPORT_FILE_SIZE_LIMIT`, in MB). */
  readonly importMaxBytes: number;
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
  readonly #store: AnnotationStore;

  constructor(deps: AnnotationDeps) {
    this.#d = deps;
    this.#store = new AnnotationStore(deps.db);
  }

  /**
   * Newest first (`created_at` desc, then insertion order desc); `keyword` matches question or answer,
   * case-insensitively. A `limit` above `ANNOTATION_LIST_MAX_LIMIT` is served that many (as Dify).
   */
  async list(app: App, q: { page: number; limit: number; keyword: string }): Promise<{ items: Annotation[]; total: number; perPage: number }> {
    const perPage = Math.min(q.limit, this.#d.listMaxLimit);
    const { items, total } = await this.#store.list(app.id, { keyword: q.keyword, limit: perPage, offset: (q.page - 1) * perPage });
    return { items: items.map(toAnnotation), total, perPage };
  }

  #checkQuestion(question: string): void {
    const max = this.#d.questionMaxChars;
    if (question.length > max) throw invalidParam(`question must be at most ${max} characters (ANNOTATION_QUESTION_MAX_CHARS)`);
  }

  /** A new annotation; `accountId` is the console account that wrote it (none over the Service API). */
  async create(app: App, input: { question: string; answer: string }, accountId: string | null = null): Promise<Annotation> {
    this.#checkQuestion(input.question);
    const created = await this.#store.insert({ id: newId(), appId: app.id, question: input.question, answer: input.answer, now: this.#d.clock.now(), accountId });
    await this.#afterEdit(app.id);
    return toAnnotation(created);
  }

  /**
   * "Improve this answer" (Dify's `POST /apps/{id}/annotations` with `message_id`): the annotation
   * of a message of this app, its question the message's query (unless `question` is given) and
   * its answer the corrected text. A message corrected before has its annotation edited, as in
   * Dify (`message.annotation`), so one message never makes two.
   */
  async createFromMessage(app: App, input: { messageId: string; answer: string; question?: string }, accountId: string | null): Promise<Annotation & { messageId: string }> {
    const msg = isUuid(input.messageId) ? await this.#d.findMessage(input.messageId) : undefined;
    if (!msg || msg.appId !== app.id) throw notFound('Message Not Exists.');
    if (input.answer.trim() === '') throw invalidParam('answer is required');
    const question = input.question?.trim() ? input.question : msg.query;
    if (!question.trim()) throw invalidParam('question is required: the message has no query to take it from');
    this.#checkQuestion(question);
    const stored = await this.#store.upsertForMessage({
      id: newId(),
      appId: app.id,
      question,
      answer: input.answer,
      now: this.#d.clock.now(),
      accountId,
      messageId: input.messageId,
      conversationId: msg.conversationId,
    });
    await this.#afterEdit(app.id);
    return { ...toAnnotation(stored), messageId: input.messageId };
  }

  /** A message of this app to improve: its query and answer, and its annotation if it has one (404 `Message Not Exists.` otherwise). */
  async messageToImprove(app: App, messageId: string): Promise<{ query: string; answer: string; annotation: Annotation | undefined }> {
    const msg = isUuid(messageId) ? await this.#d.findMessage(messageId) : undefined;
    if (!msg || msg.appId !== app.id) throw notFound('Message Not Exists.');
    return { query: msg.query, answer: msg.answer, annotation: await this.ofMessage(app, messageId) };
  }

  /** The annotation made from a message, if any (the Logs page shows it beside the answer). */
  async ofMessage(app: App, messageId: string): Promise<Annotation | undefined> {
    const a = isUuid(messageId) ? await this.#store.findByMessage(app.id, messageId) : undefined;
    return a && toAnnotation(a);
  }

  /** One annotation. */
  async get(app: App, id: string): Promise<Annotation> {
    return toAnnotation(await this.#find(app.id, id));
  }

  /** The replies an annotation gave, newest first (Dify's `…/annotations/{id}/hit-histories`). */
  async hitHistories(app: App, id: string, q: { page: number; limit: number }): Promise<{ items: HitHistory[]; total: number; perPage: number }> {
    const found = await this.#find(app.id, id);
    const perPage = Math.min(q.limit, this.#d.listMaxLimit);
    const { items, total } = await this.#store.hitHistories(found.id, { limit: perPage, offset: (q.page - 1) * perPage });
    return { items, total, perPage };
  }

  /**
   * Imports annotations from CSV bytes (Dify's batch import: first column question, second answer,
   * the first row a header). Every row is checked before anything is written; a bad row is a 400
   * naming it. The rows are written in one transaction, newest last; with reply enabled one sync
   * job embeds them. Returns how many were imported.
   */
  async importCsv(app: App, bytes: Buffer, accountId: string | null): Promise<{ imported: number }> {
    const d = this.#d;
    if (bytes.length > d.importMaxBytes) throw invalidParam(`file must be at most ${d.importMaxBytes / 1024 / 1024} MB (ANNOTATION_IMPORT_FILE_SIZE_LIMIT)`);
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw invalidParam('file must be UTF-8 text (a CSV file)');
    }
    let pairs;
    try {
      pairs = parseAnnotationCsv(text, d.importMaxRecords, 'ANNOTATION_IMPORT_MAX_RECORDS');
    } catch (err) {
      if (err instanceof CsvRowError) throw invalidParam(`file ${err.message}`);
      throw err;
    }
    if (pairs.length === 0) throw invalidParam('file: The CSV file is empty.');
    for (const p of pairs) {
      if (p.question.length > d.questionMaxChars) throw invalidParam(`file row ${p.row}: the question must be at most ${d.questionMaxChars} characters (ANNOTATION_QUESTION_MAX_CHARS)`);
    }
    const now = d.clock.now();
    // inserted in file order: the list (newest first, then by insertion) shows the last row first, as if created one by one
    await this.#store.insertMany(pairs.map((p) => ({ id: newId(), appId: app.id, question: p.question, answer: p.answer, now, accountId })));
    await this.#afterEdit(app.id);
    return { imported: pairs.length };
  }

  /** The app's annotations as CSV (newest first, as listed), at most `ANNOTATION_IMPORT_MAX_RECORDS` of them so the file imports back. */
  async exportCsv(app: App): Promise<{ csv: string; count: number; total: number }> {
    const rows = await this.#store.newest(app.id, this.#d.importMaxRecords);
    const total = rows.length < this.#d.importMaxRecords ? rows.length : await this.#store.count(app.id);
    return { csv: formatAnnotationCsv(rows), count: rows.length, total };
  }

  /** The reply setting, the newest job and how many annotations are embedded with the setting's model. */
  async replyStatus(app: App): Promise<ReplyStatus> {
    const [s, job, total] = await Promise.all([this.#d.index.setting(app.id), this.#store.latestJob(app.id), this.#store.count(app.id)]);
    const embedded = s ? await this.#store.embeddedCount(app.id, s.model) : 0;
    return {
      enabled: s !== undefined,
      scoreThreshold: s?.scoreThreshold ?? null,
      provider: s?.provider ?? null,
      model: s?.model ?? null,
      job: job ? { id: job.id, action: job.action, status: job.status, errorMsg: job.status === 'error' ? job.errorMsg : '' } : null,
      embedded,
      total,
    };
  }

  /** Largest CSV file `importCsv` takes, bytes (a route reading the upload stops there). */
  get importMaxBytes(): number {
    return this.#d.importMaxBytes;
  }

  /** The embedding models reply can use here (the settings form offers them). */
  embeddingModels(): { provider: string; model: string }[] {
    return this.#d.models.available();
  }

  async update(app: App, id: string, input: { question: string; answer: string }): Promise<Annotation> {
    this.#checkQuestion(input.question);
    const found = await this.#find(app.id, id);
    await this.#store.update(found.id, input.question, input.answer, this.#d.clock.now());
    await this.#afterEdit(app.id);
    return { ...toAnnotation(found), question: input.question, answer: input.answer };
  }

  /** Deletes the annotation, its hit history and its embedding. */
  async delete(app: App, id: string): Promise<void> {
    const found = await this.#find(app.id, id);
    await this.#store.delete(found.id);
  }

  async #find(appId: string, id: string): Promise<StoredAnnotation> {
    const row = isUuid(id) ? await this.#store.find(appId, id) : undefined;
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
      const open = await this.#store.openJobId(tx, app.id, action);
      if (open) return { jobId: open, status: 'processing' as const };
      const jobId = newId();
      await this.#store.insertJob(tx, { id: jobId, appId: app.id, action, setting: s, now: d.clock.now() });
      await d.queue.enqueue(REPLY_JOB, { jobId } satisfies ReplyJobPayload, { tx, maxAttempts: 1 });
      return { jobId, status: 'waiting' as const };
    }).finally(() => d.queue.notify());
  }

  /** A job of this app and action, or 400 `The job does not exist.` (as Dify). */
  async jobStatus(app: App, action: string, jobId: string): Promise<{ jobId: string; status: JobStatus; errorMsg: string }> {
    const job = isUuid(jobId) ? await this.#store.job(jobId, { appId: app.id, action }) : undefined;
    if (!job) throw invalidParam('The job does not exist.');
    return { jobId: job.id, status: job.status, errorMsg: job.status === 'error' ? job.errorMsg : '' };
  }

  /** The job handler: idempotent; a finished job is left as it is. */
  async runReplyJob(jobId: string, ctx: JobContext): Promise<void> {
    const d = this.#d;
    const job: AnnotationJob | undefined = await this.#store.job(jobId);
    if (!job || job.status === 'completed' || job.status === 'error') return;
    await this.#store.markProcessing(jobId, d.clock.now());
    // Requests apply in the order they were made: a job whose app has a later request of the other
    // action (a disable sent while an enable embeds, say) writes nothing when it commits.
    const complete = async (tx: Kysely<Database>) => {
      if (await this.#store.hasLaterOtherAction(tx, job)) throw new Superseded();
      await this.#finishJob(tx, jobId, 'completed', '');
    };
    try {
      if (job.action === 'enable') {
        await d.index.enable(job.appId, { scoreThreshold: job.scoreThreshold, provider: job.provider, model: job.model }, complete, ctx.signal);
      } else {
        await d.index.disable(job.appId, complete);
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
    await this.#store.finishJob(db, jobId, status, errorMsg, this.#d.clock.now());
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
    await this.#store.recordHit({
      id: newId(),
      appId: h.appId,
      annotationId: h.match.id,
      messageId: h.messageId,
      endUserId: h.endUserId,
      query: h.query,
      score: h.match.score,
      annotationQuestion: h.match.question,
      annotationContent: h.match.content,
      now: this.#d.clock.now(),
    });
  }
}

/** An annotation on the wire (Dify's `annotation_fields`). */
export function annotationItem(a: Annotation): Record<string, unknown> {
  return { id: a.id, question: a.question, answer: a.answer, hit_count: a.hitCount, created_at: Math.floor(a.createdAt / 1000) };
}
