import type { App, AppService } from '../apps/app-service.js';
import type { EndUserService } from '../apps/end-users.js';
import { validateInputs } from '../apps/input-form.js';
import type { Clock } from '../infra/clock.js';
import { ServiceError } from '../infra/errors.js';
import { completionRequestError, runNotPickedUp } from '../runs/errors.js';
import type { RunService } from '../runs/run-service.js';
import { runPaused } from './errors.js';
import type { McpServer, McpServerStore } from './mcp-server-store.js';
import type { AppAnswers } from './openai-chat.js';
import { toolArguments } from './mcp-tool.js';

/** What serving apps as MCP servers needs. */
export interface McpServerDeps {
  readonly store: McpServerStore;
  readonly apps: AppService;
  readonly answers: AppAnswers;
  readonly runs: RunService;
  readonly endUsers: EndUserService;
  readonly clock: Clock;
  /** `WORKFLOW_FILE_UPLOAD_LIMIT`. */
  readonly maxFiles: number;
  /** `RUN_QUEUE_WAIT_SECONDS`. */
  readonly queueWaitSeconds: number;
}

/** A tool call's answer: its text, or the error a tool result reports (`isError`). */
export type ToolAnswer = { readonly text: string; readonly error?: undefined } | { readonly error: string; readonly text?: undefined };

/** Apps published as MCP servers (Dify's "publish as MCP"): their settings and their one tool's calls. */
export class McpServers {
  readonly #d: McpServerDeps;

  constructor(deps: McpServerDeps) {
    this.#d = deps;
  }

  /** The active server of `code` and its app (an app that is not `normal` is not served); undefined: 404. */
  async active(code: string): Promise<{ server: McpServer; app: App } | undefined> {
    const server = await this.#d.store.byCode(code);
    if (!server || server.status !== 'active') return undefined;
    const app = await this.#d.apps.find(server.appId);
    if (!app || app.status !== 'normal') return undefined;
    return { server, app };
  }

  async settings(appId: string): Promise<McpServer | undefined> {
    return this.#d.store.byApp(appId);
  }

  /** Creates (inactive, as Dify) or changes an app's server. */
  async configure(appId: string, change: { status?: 'active' | 'inactive'; description?: string; parameters?: Record<string, string>; rotate?: boolean }): Promise<McpServer> {
    return this.#d.store.save(appId, change, this.#d.clock.now());
  }

  /**
   * Runs the app for one tool call, as Dify's `handle_call_tool`: a workflow's outputs as JSON
   * text, a chat or completion app's answer (each call a new conversation). The end user is the
   * server's own (Dify's `type: mcp` end user per server). A refusal or failure is the tool
   * result's error (MCP's `isError`), never a protocol error.
   */
  /** Forgets a deleted app's server. */
  removeApp(appId: string): Promise<void> {
    return this.#d.store.deleteApp(appId);
  }

  async call(server: McpServer, app: App, args: Readonly<Record<string, unknown>>): Promise<ToolAnswer> {
    const user = `mcp-server-${server.id}`;
    try {
      const { query, inputs } = toolArguments(app, args);
      if (app.mode === 'workflow') return { text: await this.#runWorkflow(app, user, inputs) };
      const started = await this.#d.answers.ask({ app, user, query, inputs });
      const outcome = await started.done;
      if (outcome.error) return { error: outcome.error.message };
      return { text: outcome.answer };
    } catch (err) {
      if (err instanceof ServiceError) return { error: err.message };
      throw err;
    }
  }

  async #runWorkflow(app: App, user: string, args: Record<string, unknown>): Promise<string> {
    const d = this.#d;
    const inputs = validateInputs(app.inputs, args, d.maxFiles);
    const endUser = await d.endUsers.getOrCreate(app.id, user);
    const started = await d.runs.start({ app, endUserId: endUser.id, user, inputs, files: [] });
    const end = await started.done;
    if (end?.notPickedUp) throw runNotPickedUp(d.queueWaitSeconds);
    const row = await d.runs.find(started.runId);
    if (row?.status === 'paused') throw runPaused(started.runId);
    if (row?.status !== 'succeeded' && row?.status !== 'partial-succeeded') throw completionRequestError(row?.error ?? `The run ended ${row?.status ?? 'without a record'}.`);
    return row.outputs ?? '{}';
  }
}
