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
  // the message store inserts a new conversation in the group commit that inserts its first message (one transaction)
  conversations: { writers: ['messages/conversation-store.ts', 'messages/message-store.ts'], readers: ['console/app-stats.ts', 'messages/message-logs.ts'] },
  dataset_pipelines: { writers: ['knowledge/pipeline/pipeline-store.ts'] },
  dataset_metadata: { writers: ['knowledge/documents/metadata-store.ts'] },
  datasets: { writers: ['knowledge/dataset-store.ts'] },
  document_metadata_values: { writers: ['knowledge/documents/metadata-store.ts'] },
  // the search dialects keep hits to enabled documents' active generation
  documents: { writers: ['knowledge/documents/document-store.ts'], readers: ['knowledge/documents/segment-store.ts', 'knowledge/index/vector-index.ts', 'knowledge/retrieval/retrieval.ts', 'store/postgres/tsvector-keyword-index.ts', 'store/sqlite/fts5-keyword-index.ts', 'store/sqlite/sqlite-vec-index.ts'] },
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
  // The segment store writes segments; the dialects' bulk writers (`SegmentWriter`) are called only by the segment
  // store's `insertBulk`, the indexer's hot path. The search dialects read them for hits.
  segments: { writers: ['knowledge/documents/segment-store.ts', 'store/postgres/segment-writer.ts', 'store/sqlite/segment-writer.ts'], readers: ['knowledge/index/vector-index.ts', 'knowledge/retrieval/retrieval.ts', 'store/postgres/tsvector-keyword-index.ts', 'store/sqlite/fts5-keyword-index.ts', 'store/sqlite/sqlite-vec-index.ts'] },
  // one table per vector size (`segment_vec_384`, …): the dialects insert and search, the vector index deletes
  'segment_vec_*': { writers: ['knowledge/index/vector-index.ts', 'store/postgres/pgvector-index.ts', 'store/sqlite/sqlite-vec-index.ts'] },
  // SQLite's full-text index of the segments (an FTS5 table), kept by its keyword dialect alone
  segments_fts: { writers: ['store/sqlite/fts5-keyword-index.ts'] },
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
/** A Kysely call whose table is not a string literal: the ratchet cannot see which table it touches. */
const VARIABLE_CALL = /\b(insertInto|updateTable|deleteFrom|selectFrom|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*(?!['\s])([^)]{0,40})/g;
/** Raw SQL: the text of `sql` templates and of better-sqlite3's `prepare(…)`. */
const RAW = [/\bsql(?:<[^>]*>)?`([^`]*)`/g, /\.prepare\(\s*(?:'([^']*)'|`([^`]*)`)/g];
/** A table named in raw SQL; `segment_vec_${dims}` (one table per vector size) counts as `segment_vec_*`. */
const RAW_TABLE = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|FROM|JOIN)\s+([a-z_]+)(\$\{)?/gi;
/** A table whose name is built with `sql.raw` (the template's text ends there, so it is read from the file). */
const RAW_BUILT = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|FROM|JOIN)\s+\$\{sql\.raw\(`([a-z_]+)\$\{/gi;
/** Rows written by the group commit (store/group-commit.ts) name their table as `{ table: '…', row }`. */
const GROUP_INSERT = /\{\s*table:\s*'([a-z_]+)',\s*row\b/g;

/**
 * Kysely calls whose table is a variable, each with why the ratchet still sees the table: a file
 * not listed here that passes a variable fails the test.
 */
const VARIABLE_TABLES: Record<string, string> = {
  'store/group-commit.ts': 'the shared writer of the message store: the tables are named where the rows are handed in (`{ table: …, row }`, counted as that file writing them)',
  'knowledge/documents/segment-store.ts': '`UnitTable` is `segments` or `parent_chunks`, both its own tables',
  'messages/message-logs.ts': 'selects from its own subqueries (`scanned.as(…)`), not from a table',
  'runs/run-store.ts': 'counts over its own subquery (the workflow logs\' capped total), not a table',
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return p === path.join(SRC, 'store', 'migrations') ? [] : sources(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

interface Usage {
  /** table → files that write it, files that read it */
  readonly tables: Map<string, { writers: Set<string>; readers: Set<string> }>;
  /** files passing a variable as a table, with the call */
  readonly variable: Map<string, string>;
}

/** What the code does today, through Kysely's calls and raw SQL alike. */
function usage(): Usage {
  const tables = new Map<string, { writers: Set<string>; readers: Set<string> }>();
  const variable = new Map<string, string>();
  const raw: { rel: string; verb: string; table: string }[] = [];
  const note = (table: string, rel: string, write: boolean) => {
    const entry = tables.get(table) ?? { writers: new Set<string>(), readers: new Set<string>() };
    tables.set(table, entry);
    (write ? entry.writers : entry.readers).add(rel);
  };
  for (const file of sources(SRC)) {
    const rel = path.relative(SRC, file).split(path.sep).join('/');
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(CALL)) note(m[2]!, rel, ['insertInto', 'updateTable', 'deleteFrom'].includes(m[1]!));
    for (const m of text.matchAll(GROUP_INSERT)) note(m[1]!, rel, true);
    for (const m of text.matchAll(VARIABLE_CALL)) if (!variable.has(rel)) variable.set(rel, `${m[1]}(${m[2]}`);
    for (const pattern of RAW) {
      for (const m of text.matchAll(pattern)) {
        for (const t of (m[1] ?? m[2] ?? '').matchAll(RAW_TABLE)) raw.push({ rel, verb: t[1]!.toUpperCase().replace(/\s+/g, ' '), table: t[3] ? `${t[2]}*` : t[2]! });
      }
    }
    for (const t of text.matchAll(RAW_BUILT)) raw.push({ rel, verb: t[1]!.toUpperCase().replace(/\s+/g, ' '), table: `${t[2]}*` });
  }
  // raw SQL names columns and catalogues after FROM too (`EXTRACT(EPOCH FROM x)`, `information_schema`):
  // only names of tables the code or OWNERS knows count
  const known = new Set([...tables.keys(), ...Object.keys(OWNERS)]);
  for (const { rel, verb, table } of raw) if (known.has(table)) note(table, rel, verb !== 'FROM' && verb !== 'JOIN');
  return { tables, variable };
}

describe('table ownership', () => {
  const { tables: used, variable } = usage();

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

  it('every Kysely call with a variable table is listed with its reason', () => {
    const unlisted = [...variable].filter(([f]) => !(f in VARIABLE_TABLES)).map(([f, call]) => `${f}: ${call}`);
    const stale = Object.keys(VARIABLE_TABLES).filter((f) => !variable.has(f)).map((f) => `${f} no longer passes a variable table`);
    expect([...unlisted, ...stale]).toEqual([]);
  });
});
