/**
 * The names of every migration in src/store/migrations/index.ts, in its order, without loading
 * them: opening the database compares these with the applied ones and imports the migrations only
 * when one is pending (a one-shot CLI command never loads them). A test checks the two agree.
 */
export const MIGRATION_NAMES: readonly string[] = [
  '001-foundation',
  '002-messages',
  '003-completion',
  '004-knowledge',
  '005-runs',
  '006-forms',
  '007-knowledge-parents',
  '008-document-status',
  '009-indexing-pause',
  '010-knowledge-qa',
  '011-conversation-variables',
  '012-segment-editing',
  '013-annotations',
  '014-dataset-tags-metadata',
  '015-server-secrets',
  '016-form-token-hash',
  '017-app-versions',
  '018-form-recipients',
  '019-agent-thoughts',
  '020-form-recipient-token-hash',
  '021-message-heartbeat',
  '022-run-owner',
  '023-job-outbox',
  '024-indexing-parse-marker',
  '025-worker-heartbeats',
  '026-message-citations',
  '027-web-app',
  '028-external-knowledge',
  '029-app-mcp-servers',
  '030-console',
  '031-console-logs',
  '032-annotation-messages',
];
