import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { DEFAULT_USER } from '../apps/end-users.js';
import { invalidParam } from '../infra/errors.js';
import { RunStore } from './run-store.js';
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

const sec = (ms: number | null) => (ms === null ? null : Math.floor(Number(ms) / 1000));

/** The console's runs list of a workflow app (issue #44): filters in epoch ms, the total counted up to `countLimit`. */
export interface ConsoleRunQuery {
  readonly status?: (typeof WORKFLOW_LOG_STATUSES)[number];
  /** Epoch ms, inclusive / exclusive. */
  readonly createdAfter?: number;
  readonly createdBefore?: number;
  readonly endUserSessionId?: string;
  readonly keyword?: string;
  readonly page: number;
  readonly limit: number;
}

/** One run of the console's runs list. */
export interface ConsoleRunRow {
  readonly id: string;
  readonly status: string;
  readonly error: string | null;
  /** Seconds. */
  readonly elapsed_time: number;
  readonly total_tokens: number;
  readonly total_steps: number;
  readonly exceptions_count: number;
  readonly end_user: { readonly id: string; readonly session_id: string };
  readonly triggered_from: 'app-run';
  /** Epoch seconds. */
  readonly created_at: number;
  readonly finished_at: number | null;
}

/**
 * `GET /workflows/logs`: the workflow app's runs started through the API, newest first, paged by
 * page number with a total (as Dify's workflow app logs). `keyword` matches inputs, outputs and
 * the end user's session id.
 */
export class WorkflowLogs {
  readonly #db: Kysely<Database>;
  readonly #runs: RunStore;

  constructor(db: Kysely<Database>) {
    this.#db = db;
    this.#runs = new RunStore(db);
  }

  /** The console's runs list: the same query as `page`, in the console's shape (`countLimit`: `CONSOLE_LOG_COUNT_LIMIT`). */
  async consolePage(appId: string, q: ConsoleRunQuery, countLimit: number): Promise<{ data: ConsoleRunRow[]; page: number; limit: number; total: number; total_capped: boolean; has_more: boolean }> {
    const { total, capped, rows } = await this.#runs.workflowLogs({
      appId,
      ...(q.status ? { status: q.status } : {}),
      // the store's lower bound is exclusive
      ...(q.createdAfter !== undefined ? { createdAfter: q.createdAfter - 1 } : {}),
      ...(q.createdBefore !== undefined ? { createdBefore: q.createdBefore } : {}),
      ...(q.endUserSessionId ? { endUserSessionId: q.endUserSessionId } : {}),
      ...(q.keyword ? { keyword: q.keyword } : {}),
      limit: q.limit,
      offset: (q.page - 1) * q.limit,
      countLimit,
    });
    return {
      data: rows.map((r) => ({
        id: r.id,
        status: r.status,
        error: r.error,
        elapsed_time: Number(r.elapsed_ms) / 1000,
        total_tokens: Number(r.total_tokens),
        total_steps: Number(r.total_steps),
        exceptions_count: Number(r.exceptions_count),
        end_user: { id: r.end_user_id, session_id: r.session_id },
        triggered_from: 'app-run' as const,
        created_at: sec(r.created_at)!,
        finished_at: sec(r.finished_at),
      })),
      page: q.page,
      limit: q.limit,
      total,
      total_capped: capped,
      has_more: capped || q.page * q.limit < total,
    };
  }

  async page(appId: string, q: WorkflowLogQuery): Promise<Record<string, unknown>> {
    const before = isoMs('created_at__before', q.createdBefore);
    const after = isoMs('created_at__after', q.createdAfter);
    if (q.account) {
      // Runs are only ever started by end users through the API; an account that exists has none.
      const acc = await new AccountStore(this.#db).byName(q.account);
      if (!acc) throw invalidParam(`created_by_account: no account named "${q.account}"`);
    }
    const { total, rows } = await this.#runs.workflowLogs({
      appId,
      ...(q.account ? { none: true } : {}),
      ...(q.status ? { status: q.status } : {}),
      ...(before !== undefined ? { createdBefore: before } : {}),
      ...(after !== undefined ? { createdAfter: after } : {}),
      ...(q.endUserSessionId ? { endUserSessionId: q.endUserSessionId } : {}),
      ...(q.keyword ? { keyword: q.keyword } : {}),
      limit: q.limit,
      offset: (q.page - 1) * q.limit,
    });
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
