import type { HumanInputFormView } from '../lib/api.js';
import type { SseEvent } from '../lib/sse.js';
import type { ApiMessage, MessageFile, RetrieverResource } from '../lib/types.js';
import { foldStep, pauseSteps, type FileRef, type Step } from '../shared/components.js';

/** One question and its answer as the chat shows it, from history or from a stream. */
export interface Turn {
  key: string;
  id: string | null;
  query: string;
  files: Array<Pick<FileRef, 'name' | 'type'> & { url?: string }>;
  answer: string;
  status: 'streaming' | 'done' | 'error' | 'stopped' | 'paused';
  error: string;
  feedback: 'like' | 'dislike' | null;
  citations: RetrieverResource[];
  steps: Step[];
  answerFiles: MessageFile[];
  humanInput: (HumanInputFormView & { form_token: string }) | null;
  conversationId: string | null;
  taskId: string | null;
  runId: string | null;
}

let seq = 0;
export function newTurn(query: string, files: Turn['files']): Turn {
  return { key: `t${++seq}`, id: null, query, files, answer: '', status: 'streaming', error: '', feedback: null, citations: [], steps: [], answerFiles: [], humanInput: null, conversationId: null, taskId: null, runId: null };
}

export function turnOf(m: ApiMessage): Turn {
  const files = m.message_files ?? [];
  return {
    ...newTurn(m.query, files.filter((f) => f.belongs_to !== 'assistant').map((f) => ({ name: f.filename ?? f.type ?? 'file', type: f.type ?? 'document', url: f.url }))),
    id: m.id,
    answer: m.answer,
    status: m.status === 'error' ? 'error' : 'done',
    error: m.error ?? '',
    feedback: m.feedback?.rating ?? null,
    citations: m.retriever_resources ?? [],
    answerFiles: files.filter((f) => f.belongs_to === 'assistant'),
    conversationId: m.conversation_id,
  };
}

/**
 * Folds one event of `POST /api/chat-messages` (or of a resumed run's event stream) into the turn:
 * answer chunks, moderation's replacement, files, citations at `message_end`, node steps, a Human
 * Input pause, and errors. Returns a new turn; the input is not changed.
 */
export function foldEvent(turn: Turn, e: SseEvent): Turn {
  const t: Turn = { ...turn };
  if (typeof e.conversation_id === 'string' && e.conversation_id) t.conversationId = e.conversation_id;
  if (typeof e.task_id === 'string' && e.task_id) t.taskId = e.task_id;
  if (typeof e.workflow_run_id === 'string' && e.workflow_run_id) t.runId = e.workflow_run_id;
  const messageId = typeof e.message_id === 'string' ? e.message_id : typeof e.id === 'string' && (e.event === 'message' || e.event === 'agent_message' || e.event === 'message_end') ? e.id : null;
  if (messageId) t.id = messageId;
  switch (e.event) {
    case 'message':
    case 'agent_message':
      t.answer += typeof e.answer === 'string' ? e.answer : '';
      if (t.status === 'paused') t.status = 'streaming';
      break;
    case 'message_replace':
      t.answer = typeof e.answer === 'string' ? e.answer : t.answer;
      break;
    case 'message_file':
      t.answerFiles = [...t.answerFiles, { id: String(e.id ?? ''), type: String(e.type ?? ''), url: String(e.url ?? ''), belongs_to: 'assistant' }];
      break;
    case 'message_end': {
      const meta = (e.metadata ?? {}) as { retriever_resources?: RetrieverResource[] };
      t.citations = Array.isArray(meta.retriever_resources) ? meta.retriever_resources : [];
      t.status = 'done';
      break;
    }
    case 'node_started':
    case 'node_finished':
      t.steps = foldStep(t.steps, e);
      break;
    case 'human_input_required': {
      const d = (e.data ?? {}) as HumanInputFormView & { form_token?: string | null; actions?: HumanInputFormView['user_actions'] };
      if (d.form_token) t.humanInput = { ...d, user_actions: d.user_actions ?? d.actions ?? [], form_token: d.form_token };
      t.status = 'paused';
      break;
    }
    case 'human_input_form_filled':
      t.status = 'streaming';
      break;
    case 'workflow_paused':
      t.status = 'paused';
      t.steps = pauseSteps(t.steps);
      break;
    case 'workflow_finished': {
      const d = (e.data ?? {}) as { status?: string; error?: string };
      if (d.status === 'failed') {
        t.status = 'error';
        t.error = d.error ?? '';
      } else if (d.status === 'stopped') t.status = 'stopped';
      else if (t.status !== 'error') t.status = 'done';
      break;
    }
    case 'error':
      t.status = 'error';
      t.error = typeof e.message === 'string' ? e.message : 'error';
      break;
  }
  return t;
}
