import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { DEFAULT_USER } from '../apps/end-users.js';
import { invalidParam } from '../infra/errors.js';
import { AccountStore } from '../accounts/account-store.js';

/**
 * The `status` filter of `GET /workflows/logs`: Dify's `WorkflowExecutionStatus` values (its
 * OpenAPI description lists only the first three, its code takes them all, paused runs included).
 */
export const WORKFLOW_LOG_STATUSES = ['succeeded', 'failed', 'stopped', 'partial-succeeded', 'paused', 'running'] as const;

export interface WorkflowLogQuery {
  readonly keyword?: string;
  readonly status?: (typeof WORKFLOW_LOG_STATUSES)[number];
  readonly page: number;
  readonly limit: number;
  /** ISO 8601. */
  readonly createdBefore?: string;
  readonly createdAfter?: string;
  readonly endUserSessionId?: string;
  readonly account?: string;
}

function isoMs(field: string, v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw invalidParam(`${field} must be an ISO 8601 timestamp, got "${v}"`);
  return ms;
}

/**
 * `GET /workflows/logs`: the workflow app's runs started through the API, newest first, paged by
 * page number with a total (as Dify's workflow app logs). `keyword` matches inputs, outputs and
 * the end user's session id.
 */
export class WorkflowLogs {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async page(appId: string, q: WorkflowLogQuery): Promise<Record<string, unknown>> {
    const before = isoMs('created_at__before', q.createdBefore);
    const after = isoMs('created_at__after', q.createdAfter);
    if (q.account) {
      // Runs are only ever started by end users through the API; an account that exists has none.
      const acc = await new AccountStore(this.#db).byName(q.account);
      if (!acc) throw invalidParam(`created_by_account: no account named "${q.account}"`);
    }
    let base = this.#db
      .selectFrom('workflow_runs as r')
      .innerJoin('end_users as u', 'u.id', 'r.end_user_id')
      .where('r.app_id', '=', appId)
      .where('r.mode', '=', 'workflow');
    if (q.account) base = base.where(sql<boolean>`1 = 0`);
    if (q.status) base = base.where('r.status', '=', q.status);
    if (before !== undefined) base = base.where('r.created_at', '<', before);
    if (after !== undefined) base = base.where('r.created_at', '>', after);
    if (q.endUserSessionId) base = base.where('u.session_id', '=', q.endUserSessionId);
    if (q.keyword) {
      // Case-insensitive, with the keyword's own % and _ taken literally.
      const like = `%${q.keyword.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const match = (col: string) => sql<boolean>`lower(coalesce(${sql.ref(col)}, '')) like ${like} escape '\\'`;
      base = base.where((eb) => eb.or([match('r.inputs'), match('r.outputs'), match('u.session_id')]));
    }
    const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const total = Number(n);
    const rows = await base
      .select(['r.id', 'r.status', 'r.error', 'r.elapsed_ms', 'r.total_tokens', 'r.total_steps', 'r.exceptions_count', 'r.created_at', 'r.finished_at', 'u.id as end_user_id', 'u.session_id'])
      .orderBy('r.created_at', 'desc')
      .orderBy('r.id', 'desc')
      .limit(q.limit)
      .offset((q.page - 1) * q.limit)
      .execute();
    const sec = (ms: number | null) => (ms === null ? null : Math.floor(Number(ms) / 1000));
    return {
      page: q.page,
      limit: q.limit,
      total,
      has_more: q.page * q.limit < total,
      data: rows.map((r) => ({
        id: r.id,
        workflow_run: {
          id: r.id,
          version: 'published',
          status: r.status,
          error: r.error,
          elapsed_time: Number(r.elapsed_ms) / 1000,
          total_tokens: Number(r.total_tokens),
          total_steps: Number(r.total_steps),
          created_at: sec(r.created_at),
          finished_at: sec(r.finished_at),
          exceptions_count: Number(r.exceptions_count),
          triggered_from: 'app-run',
        },
        created_from: 'service-api',
        created_by_role: 'end_user',
        created_by_account: null,
        created_by_end_user: { id: r.end_user_id, type: 'service_api', is_anonymous: r.session_id === DEFAULT_USER, session_id: r.session_id },
        created_at: sec(r.created_at),
        details: null,
      })),
    };
  }
}
