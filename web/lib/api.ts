import { readEvents, type SseEvent } from './sse.js';
import type { AppParameters, ConversationList, MessageList, SiteInfo, UploadedFile } from './types.js';

/** An error answer of the web API, in Dify's shape (`{code, message, status}`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Where a browser keeps its end-user token for one app: `localStorage`, one key per app code (and
 * per `sys.user_id` an embedding site names), so a page opened again is the same end user, with its
 * conversations. Storage that throws (an iframe with third-party storage blocked) falls back to
 * memory for the page's life.
 */
const memory = new Map<string, string>();
function storageKey(code: string): string {
  return `dovetail:web-app-token:${code}`;
}
function readToken(code: string): string | null {
  try {
    return localStorage.getItem(storageKey(code)) ?? memory.get(code) ?? null;
  } catch {
    return memory.get(code) ?? null;
  }
}
function writeToken(code: string, token: string | null): void {
  if (token === null) memory.delete(code);
  else memory.set(code, token);
  try {
    if (token === null) localStorage.removeItem(storageKey(code));
    else localStorage.setItem(storageKey(code), token);
  } catch {
    // memory only
  }
}

async function errorOf(r: Response): Promise<ApiError> {
  let code = 'unknown';
  let message = `${r.status} ${r.statusText}`;
  try {
    const body = (await r.json()) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string') code = body.code;
    if (typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: the status line says it
  }
  return new ApiError(r.status, code, message);
}

export interface StreamHandle {
  /** Settles when the server has answered (the stream is open: events from now on reach `onEvent`), or the call failed. */
  readonly opened: Promise<void>;
  readonly done: Promise<void>;
  abort(): void;
}

/**
 * The web app API under `/api` as Dify's own web app calls it (its `web/service/share.ts`): a
 * passport per app code (`GET /api/passport` with `X-App-Code`), then every call with that bearer
 * token. A 401 (an expired or revoked token) asks for a new passport once and retries.
 */
export class WebApi {
  #token: string | null;

  constructor(
    readonly code: string,
    private readonly opts: { base?: string; userId?: string } = {},
  ) {
    this.#slot = opts.userId ? `${code}:${opts.userId}` : code;
    this.#token = readToken(this.#slot);
  }

  /** The storage key's app part: the code, and the embedding site's user id when it names one. */
  readonly #slot: string;

  get base(): string {
    return this.opts.base ?? '';
  }

  #pending: Promise<string> | null = null;

  /** A new passport; calls made while one is on its way share it (one end user per browser). */
  passport(): Promise<string> {
    this.#pending ??= this.#fetchPassport().finally(() => (this.#pending = null));
    return this.#pending;
  }

  async #fetchPassport(): Promise<string> {
    const q = this.opts.userId ? `?user_id=${encodeURIComponent(this.opts.userId)}` : '';
    const headers: Record<string, string> = { 'X-App-Code': this.code };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    const r = await fetch(`${this.base}/api/passport${q}`, { headers });
    if (!r.ok) throw await errorOf(r);
    const { access_token } = (await r.json()) as { access_token: string };
    this.#token = access_token;
    writeToken(this.#slot, access_token);
    return access_token;
  }

  async #send(path: string, init: RequestInit, retry = true): Promise<Response> {
    if (!this.#token) await this.passport();
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${this.#token}`);
    headers.set('X-App-Code', this.code);
    const r = await fetch(`${this.base}/api${path}`, { ...init, headers });
    if (r.status === 401 && retry) {
      this.#token = null;
      writeToken(this.#slot, null);
      return this.#send(path, init, false);
    }
    if (!r.ok) throw await errorOf(r);
    return r;
  }

  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const r = await this.#send(path, init);
    if (r.status === 204) return undefined as T;
    const text = await r.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.json<T>(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) });
  }

  site(): Promise<SiteInfo> {
    return this.json('/site');
  }

  parameters(): Promise<AppParameters> {
    return this.json('/parameters');
  }

  conversations(pinned: boolean, limit = 100): Promise<ConversationList> {
    return this.json(`/conversations?limit=${limit}&pinned=${pinned}`);
  }

  messages(conversationId: string, limit = 100): Promise<MessageList> {
    return this.json(`/messages?conversation_id=${encodeURIComponent(conversationId)}&limit=${limit}`);
  }

  rename(id: string, name: string): Promise<unknown> {
    return this.post(`/conversations/${id}/name`, { name });
  }

  autoName(id: string): Promise<{ name: string }> {
    return this.post(`/conversations/${id}/name`, { auto_generate: true });
  }

  pin(id: string, pinned: boolean): Promise<unknown> {
    return this.json(`/conversations/${id}/${pinned ? 'pin' : 'unpin'}`, { method: 'PATCH' });
  }

  deleteConversation(id: string): Promise<unknown> {
    return this.json(`/conversations/${id}`, { method: 'DELETE' });
  }

  feedback(messageId: string, rating: 'like' | 'dislike' | null, content?: string): Promise<unknown> {
    return this.post(`/messages/${messageId}/feedbacks`, { rating, content: content || undefined });
  }

  suggested(messageId: string): Promise<{ data: string[] }> {
    return this.json(`/messages/${messageId}/suggested-questions`);
  }

  moreLikeThis(messageId: string): Promise<{ answer: string; id: string }> {
    return this.json(`/messages/${messageId}/more-like-this?response_mode=blocking`);
  }

  saveMessage(messageId: string): Promise<unknown> {
    return this.post('/saved-messages', { message_id: messageId });
  }

  /** The end user's saved answers, newest first (`GET /api/saved-messages`). */
  savedMessages(limit = 100): Promise<{ data: SavedMessage[]; has_more: boolean }> {
    return this.json(`/saved-messages?limit=${limit}`);
  }

  unsaveMessage(messageId: string): Promise<unknown> {
    return this.json(`/saved-messages/${encodeURIComponent(messageId)}`, { method: 'DELETE' });
  }

  async upload(file: File): Promise<UploadedFile> {
    const form = new FormData();
    form.append('file', file);
    return this.json('/files/upload', { method: 'POST', body: form });
  }

  /** A streamed call (`response_mode: streaming`): events as they arrive; `abort` closes the connection. */
  stream(path: string, init: { method?: string; body?: unknown }, onEvent: (e: SseEvent) => void): StreamHandle {
    const controller = new AbortController();
    const response = this.#send(path, {
      method: init.method ?? 'POST',
      headers: init.body === undefined ? {} : { 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: controller.signal,
    });
    const done = response
      .then(async (r) => {
        if (r.body) await readEvents(r.body, onEvent);
      })
      .catch((err: unknown) => {
        if (controller.signal.aborted) return;
        throw err;
      });
    const opened = response.then(() => undefined);
    opened.catch(() => undefined); // `done` reports the failure; a caller that awaits `opened` sees it too
    return { opened, done, abort: () => controller.abort() };
  }

  /** The Human Input form of a paused run (Dify's web form API; its token is the credential). */
  async humanInputForm(token: string): Promise<HumanInputFormView> {
    const r = await fetch(`${this.base}/api/form/human_input/${encodeURIComponent(token)}`);
    if (!r.ok) throw await errorOf(r);
    return (await r.json()) as HumanInputFormView;
  }

  /** A file for a Human Input form's file input (`POST /api/form/human_input/{token}/files/upload`). */
  async uploadForForm(token: string, file: File): Promise<UploadedFile> {
    const form = new FormData();
    form.append('file', file);
    const r = await fetch(`${this.base}/api/form/human_input/${encodeURIComponent(token)}/files/upload`, { method: 'POST', body: form });
    if (!r.ok) throw await errorOf(r);
    return (await r.json()) as UploadedFile;
  }

  async submitHumanInput(token: string, action: string, inputs: Record<string, unknown>): Promise<void> {
    const r = await fetch(`${this.base}/api/form/human_input/${encodeURIComponent(token)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ action, inputs }),
    });
    if (!r.ok) throw await errorOf(r);
  }
}

/** One saved answer (Dify's saved message). */
export interface SavedMessage {
  id: string;
  inputs: Record<string, unknown>;
  query: string;
  answer: string;
  created_at: number;
}

export interface HumanInputFormView {
  form_content: string;
  inputs: Array<{ type: string; output_variable_name: string; label?: string; required?: boolean }>;
  resolved_default_values?: Record<string, unknown>;
  user_actions: Array<{ id: string; title: string; button_style?: string }>;
  expiration_time?: number;
}
