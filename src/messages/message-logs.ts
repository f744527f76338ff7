import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { Database } from '../store/schema.js';
import { containsIgnoringCase } from '../store/like.js';
import { invalidParam } from '../infra/errors.js';
import type { StoredRetrieverResource } from './message-store.js';

/**
 * The console's logs of chat-type and completion apps (issue #44, Dify's "Logs & Annotations"):
 * an app's conversations with their message count, first query, end user, feedback summary,
 * tokens and latency; a conversation's messages with their answer, feedback, tokens, latency, the
 * run that answered (chatflows) and citations; a completion app's messages. Read-only: each list
 * reads one page of its table by an index (migration 031) and the page's figures in one grouped
 * query per table, so a page costs the same at a million messages as at ten
 * (`bench/console-logs.bench.ts`).
 */

export const LOG_FEEDBACK_FILTERS = ['like', 'dislike', 'none'] as const;
export type LogFeedbackFilter = (typeof LOG_FEEDBACK_FILTERS)[number];

export const CONVERSATION_LOG_SORTS = ['-updated_at', 'updated_at', '-created_at', 'created_at'] as const;
export type ConversationLogSort = (typeof CONVERSATION_LOG_SORTS)[number];

/** The bounds of a log query (settings, `src/config.ts`). */
export interface MessageLogLimits {
  /** A keyword searches the app's newest this many messages (`CONSOLE_LOG_SEARCH_MESSAGES`). */
  readonly searchMessages: number;
  /** The longest keyword (`CONSOLE_LOG_KEYWORD_MAX_CHARS`). */
  readonly keywordMaxChars: number;
  /** A list's total is counted up to this many rows (`CONSOLE_LOG_COUNT_LIMIT`); beyond it `total_capped`. */
  readonly countLimit: number;
}

export interface LogListQuery {
  readonly appId: string;
  /** Epoch ms, inclusive. */
  readonly createdAfter?: number;
  /** Epoch ms, exclusive. */
  readonly createdBefore?: number;
  readonly feedback?: LogFeedbackFilter;
  /** Case-insensitive, literal (`%`, `_` and `\` match themselves), in the query or the answer. */
  readonly keyword?: string;
  readonly page: number;
  readonly limit: number;
}

/** A conversation log's time range applies to the field it is sorted on: `updated_at` (last activity, the default) or `created_at`. */
export interface ConversationLogQuery extends LogListQuery {
  readonly sort?: ConversationLogSort;
}

/** Likes and dislikes, by source. */
export interface FeedbackSummary {
  readonly like: number;
  readonly dislike: number;
  readonly user: { readonly like: number; readonly dislike: number };
  readonly admin: { readonly like: number; readonly dislike: number };
}

/** One feedback on a message as the log shows it. */
export interface LogFeedback {
  readonly rating: 'like' | 'dislike';
  readonly content: string | null;
  /** Epoch seconds. */
  readonly updated_at: number;
}

export interface LogEndUser {
  readonly id: string;
  readonly session_id: string | null;
}

export interface ConversationLogRow {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly end_user: LogEndUser;
  readonly message_count: number;
  readonly first_query: string | null;
  readonly feedback: FeedbackSummary;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** Seconds: the mean latency of the conversation's answers. */
  readonly average_latency: number;
  /** Epoch seconds. */
  readonly created_at: number;
  readonly updated_at: number;
}

export interface MessageLogRow {
  readonly id: string;
  readonly conversation_id: string | null;
  readonly end_user: LogEndUser;
  readonly mode: string;
  readonly inputs: Record<string, unknown>;
  readonly query: string;
  readonly answer: string;
  readonly files: unknown[];
  /** normal | error | stopped | running */
  readonly status: string;
  readonly error: string | null;
  readonly from_source: string;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly total_price: string;
  readonly currency: string;
  /** Seconds. */
  readonly latency: number;
  /** The chatflow run that answered (its trace), else null. */
  readonly workflow_run_id: string | null;
  readonly annotation_id: string | null;
  readonly feedback: { readonly user: LogFeedback | null; readonly admin: LogFeedback | null };
  readonly retriever_resources: readonly StoredRetrieverResource[];
  /** Epoch seconds. */
  readonly created_at: number;
}

/** A page of a log: the contract's list shape, and how far a keyword searched. */
export interface LogPage<T> {
  readonly data: T[];
  readonly page: number;
  readonly limit: number;
  readonly total: number;
  /** The total is at least `total` (counting stopped at the count limit). */
  readonly total_capped: boolean;
  readonly has_more: boolean;
  /**
   * With a keyword: the newest `messages` messages were searched; `older_than` (epoch seconds) is
   * the first message not searched (null when every message in range was).
   */
  readonly search?: { readonly messages: number; readonly older_than: number | null };
}

const sec = (ms: number | string | bigint) => Math.floor(Number(ms) / 1000);

const emptySummary = (): { like: number; dislike: number; user: { like: number; dislike: number }; admin: { like: number; dislike: number } } => ({
  like: 0,
  dislike: 0,
  user: { like: 0, dislike: 0 },
  admin: { like: 0, dislike: 0 },
});

export class MessageLogs {
  readonly #db: Kysely<Database>;
  readonly #limits: MessageLogLimits;

  constructor(db: Kysely<Database>, limits: MessageLogLimits) {
    this.#db = db;
    this.#limits = limits;
  }

  #checkKeyword(keyword: string | undefined): string | undefined {
    if (keyword === undefined || keyword === '') return undefined;
    if (keyword.length > this.#limits.keywordMaxChars) throw invalidParam(`keyword: at most ${this.#limits.keywordMaxChars} characters (CONSOLE_LOG_KEYWORD_MAX_CHARS), got ${keyword.length}`);
    return keyword;
  }

  /**
   * The ids of the app's newest `searchMessages` messages (in the time range) whose query or
   * answer contains `keyword`, as a subquery on `column` (conversation or message id), and where
   * the search stopped.
   */
  async #search(q: LogListQuery, keyword: string, column: 'conversation_id' | 'id') {
    const n = this.#limits.searchMessages;
    let window = this.#db.selectFrom('messages').select(['id', 'conversation_id', 'query', 'answer']).where('app_id', '=', q.appId);
    if (q.createdAfter !== undefined) window = window.where('created_at', '>=', q.createdAfter);
    if (q.createdBefore !== undefined && column === 'id') window = window.where('created_at', '<', q.createdBefore);
    const scanned = window.orderBy('created_at', 'desc').limit(n);
    const ids = this.#db
      .selectFrom(scanned.as('w'))
      .select(`w.${column}` as 'w.id')
      .where((eb) => eb.or([containsIgnoringCase('w.query', keyword), containsIgnoringCase('w.answer', keyword)]));
    // the first message beyond the searched window, if there is one
    let beyond = this.#db.selectFrom('messages').select('created_at').where('app_id', '=', q.appId);
    if (q.createdAfter !== undefined) beyond = beyond.where('created_at', '>=', q.createdAfter);
    if (q.createdBefore !== undefined && column === 'id') beyond = beyond.where('created_at', '<', q.createdBefore);
    const first = await beyond.orderBy('created_at', 'desc').offset(n).limit(1).executeTakeFirst();
    return { ids, search: { messages: n, older_than: first ? sec(first.created_at) : null } };
  }

  /** Counts at most `countLimit` rows of `ids` (a query selecting one column). */
  async #count(ids: SelectQueryBuilder<Database, never, { id: string }>): Promise<{ total: number; capped: boolean }> {
    const cap = this.#limits.countLimit;
    const r = await this.#db
      .selectFrom(ids.limit(cap + 1).as('counted'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const n = Number(r.n);
    return n > cap ? { total: cap, capped: true } : { total: n, capped: false };
  }

  /** A page of a chat-type app's conversations (chat, agent-chat, advanced-chat). */
  async conversations(q: ConversationLogQuery): Promise<LogPage<ConversationLogRow>> {
    const keyword = this.#checkKeyword(q.keyword);
    const sort = q.sort ?? '-updated_at';
    const field = sort.replace('-', '') as 'created_at' | 'updated_at';
    const desc = sort.startsWith('-');
    // the time range selects by the field the list is sorted on: by last activity (default) or creation,
    // so the range and the order are one index range (docs/decisions.md, "Log lists")
    let base = this.#db.selectFrom('conversations as c').where('c.app_id', '=', q.appId);
    if (q.createdAfter !== undefined) base = base.where(`c.${field}`, '>=', q.createdAfter);
    if (q.createdBefore !== undefined) base = base.where(`c.${field}`, '<', q.createdBefore);
    if (q.feedback === 'none') base = base.where((eb) => eb.not(eb.exists(eb.selectFrom('message_feedbacks as f').select('f.id').whereRef('f.conversation_id', '=', 'c.id'))));
    else if (q.feedback) base = base.where('c.id', 'in', this.#rated(q.appId, q.feedback, 'conversation_id'));
    let search: LogPage<unknown>['search'];
    if (keyword !== undefined) {
      const s = await this.#search(q, keyword, 'conversation_id');
      search = s.search;
      const ids = s.ids;
      base = base.where('c.id', 'in', ids as never);
    }
    const { total, capped } = await this.#count(base.select('c.id') as unknown as SelectQueryBuilder<Database, never, { id: string }>);
    const rows = await base
      .select(['c.id', 'c.name', 'c.status', 'c.end_user_id', 'c.created_at', 'c.updated_at'])
      .select((eb) =>
        eb
          .selectFrom('messages as m')
          .select('m.query')
          .whereRef('m.conversation_id', '=', 'c.id')
          .orderBy('m.created_at')
          .orderBy('m.id')
          .limit(1)
          .as('first_query'),
      )
      .orderBy(`c.${field}`, desc ? 'desc' : 'asc')
      .orderBy('c.id', desc ? 'desc' : 'asc')
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    const ids = rows.map((r) => r.id);
    const [stats, feedback, users] = await Promise.all([this.#messageStats(ids), this.#feedbackSummaries(ids), this.#endUsers(rows.map((r) => r.end_user_id))]);
    return {
      data: rows.map((r) => {
        const st = stats.get(r.id);
        return {
          id: r.id,
          name: r.name,
          status: r.status,
          end_user: { id: r.end_user_id, session_id: users.get(r.end_user_id) ?? null },
          message_count: st?.count ?? 0,
          first_query: r.first_query ?? null,
          feedback: feedback.get(r.id) ?? emptySummary(),
          prompt_tokens: st?.prompt ?? 0,
          completion_tokens: st?.completion ?? 0,
          total_tokens: (st?.prompt ?? 0) + (st?.completion ?? 0),
          average_latency: st?.latency ?? 0,
          created_at: sec(r.created_at),
          updated_at: sec(r.updated_at),
        };
      }),
      page: q.page,
      limit: q.limit,
      total,
      total_capped: capped,
      has_more: capped || q.page * q.limit < total,
      ...(search ? { search } : {}),
    };
  }

  /**
   * A conversation of the app with a page of its messages, oldest first; undefined when the app has
   * no such conversation.
   */
  async conversation(appId: string, conversationId: string, opts: { page: number; limit: number }): Promise<(Omit<ConversationLogRow, 'first_query'> & { messages: LogPage<MessageLogRow> }) | undefined> {
    const c = await this.#db
      .selectFrom('conversations')
      .select(['id', 'name', 'status', 'end_user_id', 'created_at', 'updated_at'])
      .where('id', '=', conversationId)
      .where('app_id', '=', appId)
      .executeTakeFirst();
    if (!c) return undefined;
    const [stats, feedback, users] = await Promise.all([this.#messageStats([c.id]), this.#feedbackSummaries([c.id]), this.#endUsers([c.end_user_id])]);
    const st = stats.get(c.id);
    const total = st?.count ?? 0;
    const rows = await this.#db
      .selectFrom('messages')
      .selectAll()
      .where('conversation_id', '=', c.id)
      .orderBy('created_at')
      .orderBy('id')
      .limit(opts.limit)
      .offset((opts.page - 1) * opts.limit)
      .execute();
    const messages = await this.#messageRows(rows, users);
    return {
      id: c.id,
      name: c.name,
      status: c.status,
      end_user: { id: c.end_user_id, session_id: users.get(c.end_user_id) ?? null },
      message_count: total,
      feedback: feedback.get(c.id) ?? emptySummary(),
      prompt_tokens: st?.prompt ?? 0,
      completion_tokens: st?.completion ?? 0,
      total_tokens: (st?.prompt ?? 0) + (st?.completion ?? 0),
      average_latency: st?.latency ?? 0,
      created_at: sec(c.created_at),
      updated_at: sec(c.updated_at),
      messages: { data: messages, page: opts.page, limit: opts.limit, total, total_capped: false, has_more: opts.page * opts.limit < total },
    };
  }

  /** A page of an app's messages, newest first (the log of a completion app). */
  async messages(q: LogListQuery): Promise<LogPage<MessageLogRow>> {
    const keyword = this.#checkKeyword(q.keyword);
    let base = this.#db.selectFrom('messages as m').where('m.app_id', '=', q.appId);
    if (q.createdAfter !== undefined) base = base.where('m.created_at', '>=', q.createdAfter);
    if (q.createdBefore !== undefined) base = base.where('m.created_at', '<', q.createdBefore);
    if (q.feedback === 'none') base = base.where((eb) => eb.not(eb.exists(eb.selectFrom('message_feedbacks as f').select('f.id').whereRef('f.message_id', '=', 'm.id'))));
    else if (q.feedback) base = base.where('m.id', 'in', this.#rated(q.appId, q.feedback, 'message_id'));
    let search: LogPage<unknown>['search'];
    if (keyword !== undefined) {
      const s = await this.#search(q, keyword, 'id');
      search = s.search;
      base = base.where('m.id', 'in', s.ids as never);
    }
    const { total, capped } = await this.#count(base.select('m.id') as unknown as SelectQueryBuilder<Database, never, { id: string }>);
    const rows = await base.selectAll('m').orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(q.limit).offset((q.page - 1) * q.limit).execute();
    const users = await this.#endUsers(rows.map((r) => r.end_user_id));
    return {
      data: await this.#messageRows(rows, users),
      page: q.page,
      limit: q.limit,
      total,
      total_capped: capped,
      has_more: capped || q.page * q.limit < total,
      ...(search ? { search } : {}),
    };
  }

  /** One message of the app as the log shows it; undefined when the app has none such. */
  async message(appId: string, messageId: string): Promise<MessageLogRow | undefined> {
    const row = await this.#db.selectFrom('messages').selectAll().where('id', '=', messageId).where('app_id', '=', appId).executeTakeFirst();
    if (!row) return undefined;
    return (await this.#messageRows([row], await this.#endUsers([row.end_user_id])))[0];
  }

  /** The conversations (or messages) of the app with a `rating` feedback from anyone. */
  #rated(appId: string, rating: 'like' | 'dislike', column: 'conversation_id' | 'message_id') {
    return this.#db.selectFrom('message_feedbacks').select(`${column} as fid` as 'message_id').where('app_id', '=', appId).where('rating', '=', rating);
  }

  /** Per conversation: its message count, token sums and mean latency. */
  async #messageStats(ids: readonly string[]): Promise<Map<string, { count: number; prompt: number; completion: number; latency: number }>> {
    const out = new Map<string, { count: number; prompt: number; completion: number; latency: number }>();
    if (ids.length === 0) return out;
    const rows = await this.#db
      .selectFrom('messages')
      .select((eb) => [
        'conversation_id',
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number>('prompt_tokens').as('p'),
        eb.fn.sum<number>('completion_tokens').as('c'),
        eb.fn.avg<number>('latency').as('l'),
      ])
      .where('conversation_id', 'in', [...ids])
      .groupBy('conversation_id')
      .execute();
    for (const r of rows) out.set(r.conversation_id!, { count: Number(r.n), prompt: Number(r.p ?? 0), completion: Number(r.c ?? 0), latency: Math.round(Number(r.l ?? 0) * 1000) / 1000 });
    return out;
  }

  async #feedbackSummaries(conversationIds: readonly string[]): Promise<Map<string, FeedbackSummary>> {
    const out = new Map<string, ReturnType<typeof emptySummary>>();
    if (conversationIds.length === 0) return out;
    const rows = await this.#db
      .selectFrom('message_feedbacks')
      .select((eb) => ['conversation_id', 'rating', 'from_source', eb.fn.countAll<number>().as('n')])
      .where('conversation_id', 'in', [...conversationIds])
      .groupBy(['conversation_id', 'rating', 'from_source'])
      .execute();
    for (const r of rows) {
      const s = out.get(r.conversation_id!) ?? emptySummary();
      out.set(r.conversation_id!, s);
      const n = Number(r.n);
      const rating = r.rating === 'like' ? 'like' : 'dislike';
      s[rating] += n;
      s[r.from_source === 'admin' ? 'admin' : 'user'][rating] += n;
    }
    return out;
  }

  async #endUsers(ids: readonly string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await this.#db.selectFrom('end_users').select(['id', 'session_id']).where('id', 'in', unique).execute();
    return new Map(rows.map((r) => [r.id, r.session_id]));
  }

  async #messageRows(rows: readonly Database['messages'][], users: Map<string, string>): Promise<MessageLogRow[]> {
    const ids = rows.map((r) => r.id);
    const feedback = new Map<string, { user: LogFeedback | null; admin: LogFeedback | null }>();
    if (ids.length > 0) {
      const fb = await this.#db.selectFrom('message_feedbacks').select(['message_id', 'rating', 'content', 'from_source', 'updated_at']).where('message_id', 'in', ids).execute();
      for (const f of fb) {
        const slot = feedback.get(f.message_id) ?? { user: null, admin: null };
        feedback.set(f.message_id, slot);
        slot[f.from_source === 'admin' ? 'admin' : 'user'] = { rating: f.rating === 'like' ? 'like' : 'dislike', content: f.content, updated_at: sec(f.updated_at) };
      }
    }
    return rows.map((r) => ({
      id: r.id,
      conversation_id: r.conversation_id,
      end_user: { id: r.end_user_id, session_id: users.get(r.end_user_id) ?? null },
      mode: r.mode,
      inputs: JSON.parse(r.inputs) as Record<string, unknown>,
      query: r.query,
      answer: r.answer,
      files: JSON.parse(r.files) as unknown[],
      status: r.status,
      error: r.error,
      from_source: r.from_source,
      prompt_tokens: Number(r.prompt_tokens),
      completion_tokens: Number(r.completion_tokens),
      total_tokens: Number(r.prompt_tokens) + Number(r.completion_tokens),
      total_price: r.total_price,
      currency: r.currency,
      latency: Number(r.latency),
      workflow_run_id: r.workflow_run_id,
      annotation_id: r.annotation_id ?? null,
      feedback: feedback.get(r.id) ?? { user: null, admin: null },
      retriever_resources: JSON.parse(r.retriever_resources ?? '[]') as StoredRetrieverResource[],
      created_at: sec(r.created_at),
    }));
  }
}
