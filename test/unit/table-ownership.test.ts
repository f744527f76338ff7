import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Which source files may touch each table with Kysely (`selectFrom`, `insertInto`, `updateTable`,
 * `deleteFrom`). A store owns its tables; everything else calls it (issue #17).
 */
const OWNERS: Record<string, readonly string[]> = {
  accounts: ['src/accounts/account-store.ts'],
  annotation_embeddings: ['src/annotations/annotation-index.ts', 'src/annotations/annotation-service.ts'], // TODO(#17) shrink to the store
  annotation_hit_histories: ['src/annotations/annotation-service.ts'], // TODO(#17) shrink to the store
  annotation_jobs: ['src/annotations/annotation-service.ts'], // TODO(#17) shrink to the store
  api_keys: ['src/apps/app-store.ts'],
  app_annotation_settings: ['src/annotations/annotation-index.ts'], // TODO(#17) shrink to the store
  app_annotations: ['src/annotations/annotation-index.ts', 'src/annotations/annotation-service.ts'], // TODO(#17) shrink to the store
  app_versions: ['src/apps/app-store.ts'],
  apps: ['src/apps/app-store.ts'],
  conversation_variables: ['src/runs/chatflow-service.ts', 'src/runs/conversation-variables.ts'], // TODO(#17) shrink to the store
  conversations: ['src/messages/message-store.ts', 'src/runs/chatflow-service.ts', 'src/runs/run-service.ts'], // TODO(#17) shrink to the store
  dataset_metadata: ['src/knowledge/documents/documents.ts', 'src/knowledge/documents/metadata.ts'], // TODO(#17) shrink to the store
  datasets: ['src/knowledge/datasets.ts', 'src/knowledge/documents/documents.ts', 'src/knowledge/documents/metadata.ts', 'src/knowledge/documents/segments.ts', 'src/knowledge/documents/tags.ts', 'src/knowledge/index/vector-index.ts', 'src/knowledge/ingest/indexer.ts', 'src/knowledge/retrieval/retrieval.ts', 'src/knowledge/retrieval/workflow-retriever.ts'], // TODO(#17) shrink to the store
  document_metadata_values: ['src/knowledge/documents/documents.ts', 'src/knowledge/documents/metadata.ts'], // TODO(#17) shrink to the store
  documents: ['src/knowledge/datasets.ts', 'src/knowledge/documents/document-status.ts', 'src/knowledge/documents/documents.ts', 'src/knowledge/documents/metadata.ts', 'src/knowledge/documents/segments.ts', 'src/knowledge/ingest/indexer.ts', 'src/knowledge/retrieval/workflow-retriever.ts'], // TODO(#17) shrink to the store
  end_users: ['src/apps/end-users.ts', 'src/runs/run-service.ts'], // TODO(#17) shrink to the store
  feedback_page_snapshots: ['src/feedback/feedback-store.ts'],
  human_input_deliveries: ['src/forms/form-store.ts'],
  human_input_form_recipients: ['src/forms/form-store.ts'],
  human_input_forms: ['src/forms/form-store.ts'],
  indexing_runs: ['src/knowledge/documents/document-status.ts', 'src/knowledge/documents/documents.ts', 'src/knowledge/ingest/indexer.ts', 'src/knowledge/ingest/run-ownership.ts'], // TODO(#17) shrink to the store
  job_outbox: ['src/infra/queue/bullmq-queue.ts', 'src/infra/queue/outbox-relay.ts'],
  jobs: ['src/infra/queue/db-queue.ts', 'src/infra/queue/job-counts.ts'],
  message_agent_thoughts: ['src/messages/agent-thoughts.ts', 'src/runs/chatflow-service.ts'], // TODO(#17) shrink to the store
  message_feedbacks: ['src/feedback/feedback-store.ts', 'src/runs/chatflow-service.ts'], // TODO(#17) shrink to the store
  messages: ['src/messages/message-leases.ts', 'src/messages/message-store.ts', 'src/runs/chatflow-service.ts', 'src/runs/conversation-memory.ts', 'src/runs/run-queries.ts', 'src/runs/run-service.ts'], // TODO(#17) shrink to the store
  parent_chunks: ['src/knowledge/documents/documents.ts', 'src/knowledge/documents/segments.ts', 'src/knowledge/ingest/indexer.ts', 'src/knowledge/retrieval/retrieval.ts'], // TODO(#17) shrink to the store
  segment_embeddings: ['src/knowledge/index/vector-index.ts', 'src/store/postgres/pgvector-index.ts'], // TODO(#17) shrink to the store
  segments: ['src/knowledge/documents/child-chunks.ts', 'src/knowledge/documents/documents.ts', 'src/knowledge/documents/segments.ts', 'src/knowledge/index/vector-index.ts', 'src/knowledge/ingest/indexer.ts', 'src/knowledge/retrieval/retrieval.ts', 'src/store/postgres/segment-writer.ts'], // TODO(#17) shrink to the store
  server_secrets: ['src/infra/server-keys.ts'],
  tag_bindings: ['src/knowledge/datasets.ts', 'src/knowledge/documents/documents.ts', 'src/knowledge/documents/tags.ts'], // TODO(#17) shrink to the store
  tags: ['src/knowledge/documents/tags.ts'], // TODO(#17) shrink to the store
  upload_files: ['src/files/file-store.ts'],
  workflow_run_events: ['src/apps/app-data.ts', 'src/runs/event-reader.ts', 'src/runs/journal.ts', 'src/runs/run-queries.ts', 'src/runs/run-service.ts'], // TODO(#17) shrink to the store
  workflow_run_snapshots: ['src/apps/app-data.ts', 'src/runs/journal.ts', 'src/runs/run-service.ts'], // TODO(#17) shrink to the store
  workflow_runs: ['src/apps/app-data.ts', 'src/cli/app-commands.ts', 'src/runs/journal.ts', 'src/runs/run-counts.ts', 'src/runs/run-queries.ts', 'src/runs/run-service.ts', 'src/runs/workflow-logs.ts'], // TODO(#17) shrink to the store
  workspaces: ['src/apps/app-store.ts'],
};

const ROOT = join(import.meta.dirname, '..', '..');
const CALL = /\b(?:selectFrom|insertInto|updateTable|deleteFrom)\(\s*'([a-z_]+)(?:\s+as\s+[a-z_]+)?'/g;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (relative(ROOT, path) !== join('src', 'store', 'migrations')) out.push(...sources(path));
    } else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** table → files touching it. */
function touches(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const path of sources(join(ROOT, 'src'))) {
    const file = relative(ROOT, path).split('\\').join('/');
    for (const m of readFileSync(path, 'utf8').matchAll(CALL)) {
      const table = m[1]!;
      if (!found.has(table)) found.set(table, new Set());
      found.get(table)!.add(file);
    }
  }
  return found;
}

describe('table ownership', () => {
  const found = touches();

  it('finds the tables', () => {
    expect(found.size).toBeGreaterThan(10);
  });

  it('every table touched in src has owners', () => {
    expect([...found.keys()].filter((t) => !(t in OWNERS)).sort()).toEqual([]);
  });

  it('only the owners touch a table', () => {
    const strays: string[] = [];
    for (const [table, files] of found) {
      for (const file of files) if (!(OWNERS[table] ?? []).includes(file)) strays.push(`${file} touches ${table}`);
    }
    expect(strays.sort()).toEqual([]);
  });
});
