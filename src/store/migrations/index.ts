import type { Migration } from 'kysely';
import * as m001 from './001-foundation.js';
import * as m002 from './002-messages.js';
import * as m003 from './003-completion.js';
import * as m005 from './005-runs.js';
import * as m006 from './006-forms.js';
import * as m004 from './004-knowledge.js';
import * as m007 from './007-knowledge-parents.js';
import * as m008 from './008-document-status.js';
import * as m009 from './009-indexing-pause.js';
import * as m010 from './010-knowledge-qa.js';
import * as m011 from './011-conversation-variables.js';
import * as m012 from './012-segment-editing.js';
import * as m013 from './013-annotations.js';
import * as m014 from './014-dataset-tags-metadata.js';
import * as m015 from './015-server-secrets.js';
import * as m016 from './016-form-token-hash.js';
import * as m017 from './017-app-versions.js';
import * as m018 from './018-form-recipients.js';
import * as m019 from './019-agent-thoughts.js';
import * as m020 from './020-form-recipient-token-hash.js';
import * as m021 from './021-message-heartbeat.js';
import * as m022 from './022-run-owner.js';
import * as m023 from './023-job-outbox.js';
import * as m024 from './024-indexing-parse-marker.js';
import * as m025 from './025-worker-heartbeats.js';
import * as m026 from './026-message-citations.js';
import * as m027 from './027-web-app.js';
import * as m028 from './028-external-knowledge.js';
import * as m029 from './029-app-mcp-servers.js';
import * as m030 from './030-console.js';
import * as m031 from './031-console-logs.js';
import * as m032 from './032-annotation-messages.js';
import * as m033 from './033-console-stats.js';
import * as m034 from './034-app-triggers.js';
import * as m035 from './035-dataset-pipelines.js';

/**
 * Every migration, in order. One set serves SQLite and PostgreSQL; each domain adds its own file
 * (`NNN-<domain>.ts`) and one line here.
 */
export const migrations: Record<string, Migration> = {
  '001-foundation': m001,
  '002-messages': m002,
  '003-completion': m003,
  '004-knowledge': m004,
  '005-runs': m005,
  '006-forms': m006,
  '007-knowledge-parents': m007,
  '008-document-status': m008,
  '009-indexing-pause': m009,
  '010-knowledge-qa': m010,
  '011-conversation-variables': m011,
  '012-segment-editing': m012,
  '013-annotations': m013,
  '014-dataset-tags-metadata': m014,
  '015-server-secrets': m015,
  '016-form-token-hash': m016,
  '017-app-versions': m017,
  '018-form-recipients': m018,
  '019-agent-thoughts': m019,
  '020-form-recipient-token-hash': m020,
  '021-message-heartbeat': m021,
  '022-run-owner': m022,
  '023-job-outbox': m023,
  '024-indexing-parse-marker': m024,
  '025-worker-heartbeats': m025,
  '026-message-citations': m026,
  '027-web-app': m027,
  '028-external-knowledge': m028,
  '029-app-mcp-servers': m029,
  '030-console': m030,
  '031-console-logs': m031,
  '032-annotation-messages': m032,
  '033-console-stats': m033,
  '034-app-triggers': m034,
  '035-dataset-pipelines': m035,
};
