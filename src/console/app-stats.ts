import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../store/schema.js';
import { DAY_MS, dayName, localToInstant, type StatsRange } from './stats-range.js';

/** An app the figures cover: chat-like apps count messages, workflow apps count runs. */
export interface StatsApp {
  readonly id: string;
  /** completion | chat | agent-chat | advanced-chat | workflow */
  readonly mode: string;
}

/** The figures, each one SQL query (`AppStats.figure`); `daily` runs them all. */
/**
 * The figures' queries: `volume` (messages, runs, conversations, end users, tokens, mean latency,
 * errors: one scan of the range), `interactions`, `cost`, `latency_p95` (a count, then a bounded
 * query per day) and `satisfaction`.
 */
export const STATS_FIGURES = ['volume', 'interactions', 'cost', 'latency_p95', 'satisfaction'] as const;
export type StatsFigure = (typeof STATS_FIGURES)[number];

/** One local day's figures. A figure with nothing to average that day is null. */
export interface DailyStats {
  /** `YYYY-MM-DD`, local to the range's time zone. */
  readonly date: string;
  /** Messages of chat-like apps (Dify's daily-messages). */
  messages: number;
  /** Conversations with a message that day (Dify's daily-conversations: distinct conversation ids). */
  conversations: number;
  /** Runs of workflow apps (Dify's workflow daily-conversations `runs`). */
  runs: number;
  /** Distinct end users who sent a message or started a run (Dify's daily-end-users / daily-terminals). */
  end_users: number;
  /** Of the conversations started that day, messages per conversation (Dify's average-session-interactions). */
  messages_per_conversation: number | null;
  /** Runs per end user who ran a workflow app that day (Dify's average-app-interactions). */
  runs_per_end_user: number | null;
  /** Prompt plus completion tokens of messages, total tokens of runs (Dify's token-costs `token_count`). */
  tokens: number;
  /** The messages' summed `total_price` per currency (runs store no price, as Dify's workflow token-costs). */
  cost: { currency: string; total_price: string }[];
  /** Mean latency of finished messages and runs, ms (messages' `latency`, runs' `elapsed_ms`). */
  latency_avg_ms: number | null;
  /** 95th percentile (nearest rank) of the same latencies, ms. */
  latency_p95_ms: number | null;
  /** Messages and runs that ended (not running or paused). */
  finished: number;
  /** Of those, messages with status `error` and runs with status `failed`. */
  errors: number;
  /** errors / finished, 0–1 (4 decimals). */
  error_rate: number | null;
  /** Likes (end users' and admins') on that day's messages. */
  likes: number;
  /** Likes per 1,000 messages (Dify's user-satisfaction-rate), 2 decimals. */
  satisfaction: number | null;
}

/** Which kinds of app the figures cover. */
export interface StatsKinds {
  /** Chat-like apps: messages, conversations, cost, satisfaction apply. */
  readonly chat: boolean;
  /** Workflow apps: runs apply. */
  readonly workflow: boolean;
}

export interface DailyStatsResult {
  readonly kinds: StatsKinds;
  readonly days: DailyStats[];
}

type Num = number | string | bigint | null;
type Row = Record<string, Num> & { day: Num };

const num = (v: Num | undefined): number => (v === null || v === undefined ? 0 : Number(v));
const round = (v: number, places: number): number => Math.round(v * 10 ** places) / 10 ** places;

/**
 * The console's monitoring figures (issue #44): per local day over a range, for one app or every
 * app of a workspace, each computed by one SQL query over the stored messages, conversations,
 * feedback and runs — the same SQL on SQLite and PostgreSQL. Days are bucketed in the range's
 * time zone by integer arithmetic on the epoch-ms timestamps with the zone's offsets over the
 * range (`StatsRange.segments`); the 95th percentile is a bounded query per day (nearest rank). Reads
 * only; the indexes of migration 033 keep each figure an index range scan.
 */
export class AppStats {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Every figure for every day of the range (days without data are zeros / nulls). */
  async daily(apps: readonly StatsApp[], range: StatsRange): Promise<DailyStatsResult> {
    const days = new Map<string, DailyStats>(range.days.map((date) => [date, emptyDay(date)]));
    const kinds = kindsOf(apps);
    for (const figure of STATS_FIGURES) {
      for (const row of await this.figure(figure, apps, range)) {
        const d = days.get(dayName(num(row.day)));
        if (d) apply(figure, d, row);
      }
    }
    for (const d of days.values()) finish(d);
    return { kinds, days: [...days.values()] };
  }

  /** One figure's rows (`day` is the local day number, days after 1970-01-01), as its query answers. */
  async figure(figure: StatsFigure, apps: readonly StatsApp[], range: StatsRange): Promise<Row[]> {
    const q = this.#query(figure, apps, range);
    if (!q) return [];
    const rows = (await q.execute(this.#db)).rows;
    return figure === 'latency_p95' ? this.#p95(rows, apps, range) : rows;
  }

  /**
   * The 95th percentile (nearest rank: the ceil(0.95 n)-th smallest) of each day's latencies, by a
   * second query per day bounded to that day's rows: ordered largest first, it skips the
   * n − ceil(0.95 n) largest and takes one, so the database keeps only the top 5 % of the day in its
   * sorter (a window function over the range sorted every row and was 3–8× slower in the bench).
   */
  async #p95(counts: readonly Row[], apps: readonly StatsApp[], range: StatsRange): Promise<Row[]> {
    const chat = apps.filter((a) => a.mode !== 'workflow').map((a) => a.id);
    const workflow = apps.filter((a) => a.mode === 'workflow').map((a) => a.id);
    const out: Row[] = [];
    for (const c of counts) {
      const day = num(c.day);
      const n = num(c.n);
      const startMs = Math.max(range.startMs, localToInstant(range.timezone, day * DAY_MS));
      const endMs = Math.min(range.endMs, localToInstant(range.timezone, (day + 1) * DAY_MS));
      const source = this.#source(chat, workflow, { ...range, startMs, endMs });
      const skip = n - Math.ceil((95 * n) / 100);
      const r = await sql<Row>`SELECT s.latency_ms AS latency_p95_ms FROM (${source}) s WHERE s.latency_ms IS NOT NULL ORDER BY s.latency_ms DESC LIMIT 1 OFFSET ${sql.lit(skip)}`.execute(this.#db);
      if (r.rows[0]) out.push({ day, latency_p95_ms: r.rows[0].latency_p95_ms });
    }
    return out;
  }

  #query(figure: StatsFigure, apps: readonly StatsApp[], range: StatsRange): RawBuilder<Row> | undefined {
    const chat = apps.filter((a) => a.mode !== 'workflow').map((a) => a.id);
    const workflow = apps.filter((a) => a.mode === 'workflow').map((a) => a.id);
    const messagesOnly = figure === 'cost' || figure === 'satisfaction';
    if (chat.length === 0 && (workflow.length === 0 || messagesOnly)) return undefined;
    const source = this.#source(chat, messagesOnly ? [] : workflow, range);
    switch (figure) {
      case 'volume':
        return sql<Row>`SELECT s.day AS day, SUM(CASE WHEN s.kind = 'm' THEN 1 ELSE 0 END) AS messages, SUM(CASE WHEN s.kind = 'r' THEN 1 ELSE 0 END) AS runs, COUNT(DISTINCT s.conversation_id) AS conversations, COUNT(DISTINCT s.end_user_id) AS end_users, SUM(s.tokens) AS tokens, AVG(s.latency_ms) AS latency_avg_ms, SUM(s.finished) AS finished, SUM(s.failed) AS errors FROM (${source}) s GROUP BY s.day`;
      case 'latency_p95':
        // the day's count of latencies; `figure` then reads each day's percentile by a bounded query
        return sql<Row>`SELECT s.day AS day, COUNT(*) AS n FROM (${source}) s WHERE s.latency_ms IS NOT NULL GROUP BY s.day`;
      case 'interactions':
        return this.#interactions(chat, workflow, range);
      case 'cost':
        return sql<Row>`SELECT c.day AS day, c.currency AS currency, SUM(c.price) AS total_price FROM (${this.#messages(chat, range).select(['m.currency as currency', sql`CAST(m.total_price AS DECIMAL(30, 10))`.as('price')])}) c GROUP BY c.day, c.currency`;
      case 'satisfaction':
        return this.#satisfaction(chat, range);
    }
  }

  /**
   * Likes per message: the day's messages (index-only) and the likes on them, found from the likes
   * (far fewer) given since the range began — a like never predates its message.
   */
  #satisfaction(chat: readonly string[], range: StatsRange): RawBuilder<Row> {
    const counts = this.#messages(chat, range).select([sql`COUNT(*)`.as('satisfaction_messages'), sql`0`.as('likes')]).groupBy(sql`1`);
    const likes = this.#db
      .selectFrom('message_feedbacks as f')
      .innerJoin('messages as m', 'm.id', 'f.message_id')
      .where('f.app_id', 'in', chat)
      .where('f.created_at', '>=', range.startMs)
      .where('f.rating', '=', 'like')
      .where('m.created_at', '>=', range.startMs)
      .where('m.created_at', '<', range.endMs)
      .select([this.#day('m.created_at', range).as('day'), sql`0`.as('satisfaction_messages'), sql`COUNT(*)`.as('likes')])
      .groupBy(sql`1`);
    return sql<Row>`SELECT u.day AS day, SUM(u.satisfaction_messages) AS satisfaction_messages, SUM(u.likes) AS likes FROM (${counts.unionAll(likes)}) u GROUP BY u.day`;
  }

  /**
   * Messages per conversation, of the conversations started each day (their messages whenever
   * sent, as Dify's), and runs per end user each day.
   */
  #interactions(chat: readonly string[], workflow: readonly string[], range: StatsRange): RawBuilder<Row> {
    const started =
      chat.length === 0
        ? undefined
        : this.#db
        .selectFrom('conversations as c')
        .innerJoin('messages as m', 'm.conversation_id', 'c.id')
        .where('c.app_id', 'in', chat)
        .where('c.created_at', '>=', range.startMs)
        .where('c.created_at', '<', range.endMs)
        .select([this.#day('c.created_at', range).as('day'), sql`COUNT(DISTINCT c.id)`.as('started'), sql`COUNT(*)`.as('started_messages'), sql`0`.as('wf_runs'), sql`0`.as('wf_users')])
            .groupBy(sql`1`);
    const runs =
      workflow.length === 0
        ? undefined
        : this.#runs(workflow, range).select([sql`0`.as('started'), sql`0`.as('started_messages'), sql`COUNT(*)`.as('wf_runs'), sql`COUNT(DISTINCT w.end_user_id)`.as('wf_users')]).groupBy(sql`1`);
    const both = started && runs ? started.unionAll(runs as unknown as typeof started) : (started ?? runs)!;
    return sql<Row>`SELECT u.day AS day, SUM(u.started) AS started, SUM(u.started_messages) AS started_messages, SUM(u.wf_runs) AS wf_runs, SUM(u.wf_users) AS wf_users FROM (${both}) u GROUP BY u.day`;
  }

  /**
   * What most figures read: one row per message of the chat-like apps and per run of the workflow
   * apps in the range, with its local day, end user, conversation, tokens, latency (ms, null until
   * it ends), and whether it ended and failed.
   */
  #source(chat: readonly string[], workflow: readonly string[], range: StatsRange) {
    const messages = chat.length === 0 ? undefined : this.#messages(chat, range).select([
          sql`'m'`.as('kind'),
          'm.end_user_id as end_user_id',
          'm.conversation_id as conversation_id',
          sql`m.prompt_tokens + m.completion_tokens`.as('tokens'),
          sql`CASE WHEN m.status = 'running' THEN NULL ELSE CAST(m.latency AS DOUBLE PRECISION) * 1000 END`.as('latency_ms'),
          sql`CASE WHEN m.status = 'running' THEN 0 ELSE 1 END`.as('finished'),
          sql`CASE WHEN m.status = 'error' THEN 1 ELSE 0 END`.as('failed'),
        ]);
    const runs = workflow.length === 0 ? undefined : this.#runs(workflow, range).select([
          sql`'r'`.as('kind'),
          'w.end_user_id as end_user_id',
          sql`CAST(NULL AS TEXT)`.as('conversation_id'),
          'w.total_tokens as tokens',
          sql`CASE WHEN w.status IN ('running', 'paused') THEN NULL ELSE CAST(w.elapsed_ms AS DOUBLE PRECISION) END`.as('latency_ms'),
          sql`CASE WHEN w.status IN ('running', 'paused') THEN 0 ELSE 1 END`.as('finished'),
          sql`CASE WHEN w.status = 'failed' THEN 1 ELSE 0 END`.as('failed'),
        ]);
    // Kysely's UNION ALL (a raw join would wrap each part in parentheses, which SQLite refuses)
    return messages && runs ? messages.unionAll(runs as unknown as typeof messages) : (messages ?? runs)!;
  }

  /** The messages of the apps created in the range, with their local `day`: an index range scan of (app_id, created_at). */
  #messages(appIds: readonly string[], range: StatsRange) {
    return this.#db
      .selectFrom('messages as m')
      .where('m.app_id', 'in', appIds)
      .where('m.created_at', '>=', range.startMs)
      .where('m.created_at', '<', range.endMs)
      .select(this.#day('m.created_at', range).as('day'));
  }

  /** The workflow apps' runs created in the range, with their local `day` (chatflow runs count as their messages). */
  #runs(appIds: readonly string[], range: StatsRange) {
    return this.#db
      .selectFrom('workflow_runs as w')
      .where('w.app_id', 'in', appIds)
      .where('w.created_at', '>=', range.startMs)
      .where('w.created_at', '<', range.endMs)
      .where('w.mode', '=', 'workflow')
      .select(this.#day('w.created_at', range).as('day'));
  }

  /**
   * The local day number of an epoch-ms column: `(t + offset) / 86400000` in integer arithmetic
   * (both databases divide integers to an integer), the offset picked by a CASE over the zone's
   * offset changes inside the range (none for most ranges, one or two across a DST change).
   */
  #day(column: string, range: StatsRange): RawBuilder<number> {
    const col = sql.ref(column);
    const [first, ...later] = range.segments;
    if (later.length === 0) return sql<number>`(${col} + ${sql.lit(first!.offsetMs)}) / ${sql.lit(DAY_MS)}`;
    const whens = later.map((s, i) => sql`WHEN ${col} < ${sql.lit(s.from)} THEN ${sql.lit(range.segments[i]!.offsetMs)}`);
    return sql<number>`(${col} + CASE ${sql.join(whens, sql` `)} ELSE ${sql.lit(later.at(-1)!.offsetMs)} END) / ${sql.lit(DAY_MS)}`;
  }
}

function kindsOf(apps: readonly StatsApp[]): StatsKinds {
  return { chat: apps.some((a) => a.mode !== 'workflow'), workflow: apps.some((a) => a.mode === 'workflow') };
}

function emptyDay(date: string): DailyStats {
  return { date, messages: 0, conversations: 0, runs: 0, end_users: 0, messages_per_conversation: null, runs_per_end_user: null, tokens: 0, cost: [], latency_avg_ms: null, latency_p95_ms: null, finished: 0, errors: 0, error_rate: null, likes: 0, satisfaction: null };
}

/** Working values kept on a day between the figures' rows and `finish`. */
const scratch = new WeakMap<DailyStats, { started: number; startedMessages: number; wfRuns: number; wfUsers: number; satisfactionMessages: number }>();

function apply(figure: StatsFigure, d: DailyStats, row: Row): void {
  const s = scratch.get(d) ?? { started: 0, startedMessages: 0, wfRuns: 0, wfUsers: 0, satisfactionMessages: 0 };
  scratch.set(d, s);
  switch (figure) {
    case 'volume':
      d.messages = num(row.messages);
      d.runs = num(row.runs);
      d.conversations = num(row.conversations);
      d.end_users = num(row.end_users);
      d.tokens = num(row.tokens);
      // AVG over no finished row is NULL: the day keeps null
      d.latency_avg_ms = row.latency_avg_ms === null || row.latency_avg_ms === undefined ? null : round(num(row.latency_avg_ms), 1);
      d.finished = num(row.finished);
      d.errors = num(row.errors);
      break;
    case 'cost':
      d.cost.push({ currency: String(row.currency), total_price: num(row.total_price).toFixed(7) });
      break;
    case 'latency_p95':
      d.latency_p95_ms = round(num(row.latency_p95_ms), 1);
      break;
    case 'interactions':
      s.started = num(row.started);
      s.startedMessages = num(row.started_messages);
      s.wfRuns = num(row.wf_runs);
      s.wfUsers = num(row.wf_users);
      break;
    case 'satisfaction':
      s.satisfactionMessages = num(row.satisfaction_messages);
      d.likes = num(row.likes);
      break;
  }
}

function finish(d: DailyStats): void {
  const s = scratch.get(d);
  d.cost.sort((a, b) => a.currency.localeCompare(b.currency));
  d.error_rate = d.finished > 0 ? round(d.errors / d.finished, 4) : null;
  if (!s) return;
  d.messages_per_conversation = s.started > 0 ? round(s.startedMessages / s.started, 2) : null;
  d.runs_per_end_user = s.wfUsers > 0 ? round(s.wfRuns / s.wfUsers, 2) : null;
  d.satisfaction = s.satisfactionMessages > 0 ? round((d.likes * 1000) / s.satisfactionMessages, 2) : null;
}
