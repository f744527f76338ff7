import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';

/**
 * Which modules may touch each table (paths under src/). `writers` insert, update and delete;
 * `readers` (besides the writers) select or join. A store owns its tables: one writer per table is
 * the aim (#17), and the entries marked TODO are where services still write another's table.
 * The test is a ratchet both ways: a module that starts touching a table fails it, and so does an
 * entry left behind after its SQL moved (shrink the entry).
 */
const OWNERS: Record<string, { writers: string[]; readers?: string[] }> = {
  accounts: { writers: ['accounts/account-store.ts'] },
  annotation_embeddings: { writers: ['annotations/annotation-store.ts'] },
  annotation_hit_histories: { writers: ['annotations/annotation-store.ts'] },
  annotation_jobs: { writers: ['annotations/annotation-store.ts'] },
  api_keys: { writers: ['apps/app-store.ts'] },
  app_annotation_settings: { writers: ['annotations/annotation-store.ts'] },
  app_annotations: { writers: ['annotations/annotation-store.ts'] },
  app_mcp_servers: { writers: ['publish/mcp-server-store.ts'] },
  app_triggers: { writers: ['triggers/trigger-store.ts'] },
  app_versions: { writers: ['apps/app-store.ts'] },
  apps: { writers: ['apps/app-store.ts'] },
  console_sessions: { writers: ['console/console-session-store.ts'] },
  conversation_variables: { writers: ['runs/conversation-variables.ts'] },
  // the console's monitoring figures (console/app-stats.ts) read messages, conversations, feedback and runs by day
  // the console's logs (messages/message-logs.ts) read a page of conversations with their messages' figures, feedback and end users
  conversations: { writers: ['messages/conversation-store.ts'], readers: ['console/app-stats.ts', 'messages/message-logs.ts'] },
  dataset_pipelines: { writers: ['knowledge/pipeline/pipeline-store.ts'] },
  dataset_metadata: { writers: ['knowledge/documents/metadata-store.ts'] },
  datasets: { writers: ['knowledge/dataset-store.ts'] },
  document_metadata_values: { writers: ['knowledge/documents/metadata-store.ts'] },
  documents: { writers: ['knowledge/documents/document-store.ts'], readers: ['knowledge/documents/segment-store.ts', 'knowledge/index/vector-index.ts', 'knowledge/retrieval/retrieval.ts'] },
  // the forms store joins uploads to their form's web user to find files uploaded and never submitted (the upload sweep)
  end_users: { writers: ['apps/end-users.ts'], readers: ['runs/run-store.ts', 'forms/form-store.ts', 'messages/message-logs.ts'] },
  feedback_page_snapshots: { writers: ['feedback/feedback-store.ts'] },
  human_input_deliveries: { writers: ['forms/form-store.ts'] },
  human_input_form_recipients: { writers: ['forms/form-store.ts'] },
  human_input_forms: { writers: ['forms/form-store.ts'] },
  indexing_runs: { writers: ['knowledge/ingest/indexing-run-store.ts'] },
  job_outbox: { writers: ['infra/queue/outbox-relay.ts'], readers: ['infra/queue/bullmq-queue.ts'] },
  jobs: { writers: ['infra/queue/db-queue.ts'], readers: ['infra/queue/job-counts.ts'] },
  message_agent_thoughts: { writers: ['messages/agent-thoughts.ts'] },
  message_feedbacks: { writers: ['feedback/feedback-store.ts'], readers: ['console/app-stats.ts', 'messages/message-logs.ts'] },
  messages: { writers: ['messages/message-store.ts'], readers: ['console/app-stats.ts', 'messages/message-logs.ts'] },
  // the web app's pins: the conversations store lists with them and deletes them with their conversation
  pinned_conversations: { writers: ['messages/conversation-store.ts'] },
  parent_chunks: { writers: ['knowledge/documents/segment-store.ts'] },
  saved_messages: { writers: ['messages/saved-messages.ts'] },
  segment_embeddings: { writers: ['knowledge/index/vector-index.ts'], readers: ['store/postgres/pgvector-index.ts'] },
  // The segment store writes segments; the PostgreSQL bulk writer (the dialect's `SegmentWriter`, SQLite's writes raw SQL)
  // is called only by the segment store's `insertBulk`, the indexer's hot path.
  segments: { writers: ['knowledge/documents/segment-store.ts', 'store/postgres/segment-writer.ts'], readers: ['knowledge/index/vector-index.ts', 'knowledge/retrieval/retrieval.ts'] },
  server_secrets: { writers: ['infra/server-keys.ts'] },
  sites: { writers: ['apps/site-store.ts'] },
  tag_bindings: { writers: ['knowledge/documents/tag-store.ts'] },
  tags: { writers: ['knowledge/documents/tag-store.ts'] },
  upload_files: { writers: ['files/file-store.ts'], readers: ['forms/form-store.ts'] },
  workflow_run_events: { writers: ['runs/run-event-store.ts', 'runs/run-store.ts'] }, // the runs store: the log, and the run row's transactions that append to it
  workflow_run_snapshots: { writers: ['runs/run-event-store.ts', 'runs/run-store.ts'] }, // the runs store
  worker_heartbeats: { writers: ['infra/worker-presence.ts'] },
  workflow_runs: { writers: ['runs/run-store.ts'], readers: ['console/app-stats.ts'] },
  workspaces: { writers: ['apps/app-store.ts'] },
};

const SRC = path.join(PROJECT_ROOT, 'src');
const CALL = /\b(insertInto|updateTable|deleteFrom|selectFrom|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*'([a-z_]+)(?: as [a-z_]+)?'/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return p === path.join(SRC, 'store', 'migrations') ? [] : sources(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

/** What the code does today: table → files that write it, files that read it. */
function usage(): Map<string, { writers: Set<string>; readers: Set<string> }> {
  const out = new Map<string, { writers: Set<string>; readers: Set<string> }>();
  for (const file of sources(SRC)) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    for (const m of readFileSync(file, 'utf8').matchAll(CALL)) {
      const entry = out.get(m[2]!) ?? { writers: new Set<string>(), readers: new Set<string>() };
      out.set(m[2]!, entry);
      (['insertInto', 'updateTable', 'deleteFrom'].includes(m[1]!) ? entry.writers : entry.readers).add(rel);
    }
  }
  return out;
}

describe('table ownership', () => {
  const used = usage();

  it('every table the code touches has owners, and only they touch it', () => {
    const problems: string[] = [];
    for (const [table, { writers, readers }] of used) {
      const owners = OWNERS[table];
      if (!owners) {
        problems.push(`${table}: not in OWNERS (give it a store)`);
        continue;
      }
      for (const f of writers) if (!owners.writers.includes(f)) problems.push(`${table}: written by ${f}, which does not own it (call its store)`);
      for (const f of readers) if (!owners.writers.includes(f) && !(owners.readers ?? []).includes(f)) problems.push(`${table}: read by ${f}, which is neither its store nor a listed reader`);
    }
    expect(problems).toEqual([]);
  });

  it('no entry is left behind after the SQL moved', () => {
    const stale: string[] = [];
    for (const [table, owners] of Object.entries(OWNERS)) {
      const u = used.get(table);
      for (const f of owners.writers) if (!u?.writers.has(f)) stale.push(`${table}: ${f} no longer writes it`);
      for (const f of owners.readers ?? []) if (!u?.readers.has(f) || u.writers.has(f)) stale.push(`${table}: ${f} no longer only reads it`);
    }
    expect(stale).toEqual([]);
  });
});
