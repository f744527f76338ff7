/**
 * What the API description (`/docs`, `GET /v1/openapi.json`) says about each operation beyond its
 * schemas: Dify's tag and summary (from Dify's own Service API description,
 * test/fixtures/dify-openapi), the server-sent event types of the streaming operations, and which
 * routes are left out (the form page's own assets). Applied by api-description.ts when the
 * description is generated; the routes themselves do not change.
 */

/** Dify's tags, in Dify's order, with its descriptions; then Dovetail's own. */
export const TAGS: readonly { name: string; description: string }[] = [
  { name: 'Chat Messages', description: 'Operations related to chat messages and interactions.' },
  { name: 'Files', description: 'File upload and preview operations.' },
  { name: 'End Users', description: 'Operations related to end user information.' },
  { name: 'Feedback', description: 'User feedback operations.' },
  { name: 'Conversations', description: 'Operations related to managing conversations.' },
  { name: 'Audio', description: 'Text-to-Speech and Speech-to-Text operations.' },
  { name: 'Applications', description: 'Operations to retrieve application settings and information.' },
  { name: 'Annotations', description: 'Operations related to managing annotations for direct replies.' },
  { name: 'Human Input', description: 'Endpoints for resuming paused workflows that require human input.' },
  { name: 'Workflow Runs', description: 'Operations for executing and managing workflows.' },
  { name: 'Completion Messages', description: 'Operations related to text generation and completion.' },
  { name: 'Knowledge Bases', description: 'Operations for managing knowledge bases, including creation, configuration, and retrieval.' },
  { name: 'Documents', description: 'Operations for creating, updating, and managing documents within a knowledge base.' },
  { name: 'Chunks', description: 'Operations for managing document chunks and child chunks.' },
  { name: 'Metadata', description: 'Operations for managing knowledge base metadata fields and document metadata values.' },
  { name: 'Tags', description: 'Operations for managing knowledge base tags and tag bindings.' },
  { name: 'Models', description: 'Operations for retrieving available models.' },
  { name: 'Knowledge Pipeline', description: 'Operations for managing and running knowledge pipelines, including datasource plugins and pipeline execution.' },
  { name: 'Human Input form page', description: 'The page a person opens to answer a Human Input form (`/form/{token}`), and its web API (`/api/form/human_input/{token}`).' },
  { name: 'Operations', description: 'Health, readiness and metrics, for load balancers and monitoring (no key).' },
  { name: 'OpenAI-compatible', description: "Dovetail's own extension: OpenAI's chat completions and models with an app key (docs/publishing.md)." },
  { name: 'MCP server', description: "An app published as an MCP server (Dify's publish as MCP): MCP's streamable HTTP transport, no key (the server code is the credential; docs/publishing.md)." },
];

/** `METHOD path` (parameters as `{}`, paths relative to `/v1`) → Dify's tag and summary. */
const OPERATIONS: Readonly<Record<string, readonly [string, string]>> = {
  'POST /chat-messages': ['Chat Messages', 'Send Chat Message'],
  'POST /chat-messages/{}/stop': ['Chat Messages', 'Stop Chat Message Generation'],
  'GET /messages/{}/suggested': ['Chat Messages', 'Get Next Suggested Questions'],
  'POST /files/upload': ['Files', 'Upload File'],
  'GET /files/{}/preview': ['Files', 'Download File'],
  'GET /end-users/{}': ['End Users', 'Get End User Info'],
  'POST /messages/{}/feedbacks': ['Feedback', 'Submit Message Feedback'],
  'GET /app/feedbacks': ['Feedback', 'List App Feedbacks'],
  'GET /conversations': ['Conversations', 'List Conversations'],
  'GET /messages': ['Conversations', 'List Conversation Messages'],
  'GET /conversations/{}/variables': ['Conversations', 'List Conversation Variables'],
  'POST /conversations/{}/name': ['Conversations', 'Rename Conversation'],
  'PUT /conversations/{}/variables/{}': ['Conversations', 'Update Conversation Variable'],
  'DELETE /conversations/{}': ['Conversations', 'Delete Conversation'],
  'POST /audio-to-text': ['Audio', 'Convert Audio to Text'],
  'POST /text-to-audio': ['Audio', 'Convert Text to Audio'],
  'GET /info': ['Applications', 'Get App Info'],
  'GET /parameters': ['Applications', 'Get App Parameters'],
  'GET /meta': ['Applications', 'Get App Meta'],
  'GET /site': ['Applications', 'Get App WebApp Settings'],
  'POST /apps/annotations': ['Annotations', 'Create Annotation'],
  'GET /apps/annotations': ['Annotations', 'List Annotations'],
  'PUT /apps/annotations/{}': ['Annotations', 'Update Annotation'],
  'DELETE /apps/annotations/{}': ['Annotations', 'Delete Annotation'],
  'POST /apps/annotation-reply/{}': ['Annotations', 'Configure Annotation Reply'],
  'GET /apps/annotation-reply/{}/status/{}': ['Annotations', 'Get Annotation Reply Job Status'],
  'GET /workflows/run/{}': ['Workflow Runs', 'Get Workflow Run Detail'],
  'GET /workflows/logs': ['Workflow Runs', 'List Workflow Logs'],
  'GET /form/human_input/{}': ['Human Input', 'Get Human Input Form'],
  'POST /form/human_input/{}': ['Human Input', 'Submit Human Input Form'],
  'GET /workflow/{}/events': ['Workflow Runs', 'Stream Workflow Events'],
  'POST /workflows/run': ['Workflow Runs', 'Run Workflow'],
  'POST /workflows/{}/run': ['Workflow Runs', 'Run Workflow by ID'],
  'POST /workflows/tasks/{}/stop': ['Workflow Runs', 'Stop Workflow Task'],
  'POST /completion-messages': ['Completion Messages', 'Send Completion Message'],
  'POST /completion-messages/{}/stop': ['Completion Messages', 'Stop Completion Message Generation'],
  'POST /datasets': ['Knowledge Bases', 'Create an Empty Knowledge Base'],
  'GET /datasets': ['Knowledge Bases', 'List Knowledge Bases'],
  'GET /datasets/{}': ['Knowledge Bases', 'Get Knowledge Base'],
  'PATCH /datasets/{}': ['Knowledge Bases', 'Update Knowledge Base'],
  'DELETE /datasets/{}': ['Knowledge Bases', 'Delete Knowledge Base'],
  'POST /datasets/{}/document/create-by-text': ['Documents', 'Create Document by Text'],
  'POST /datasets/{}/document/create-by-file': ['Documents', 'Create Document by File'],
  'GET /datasets/{}/documents': ['Documents', 'List Documents'],
  'GET /datasets/{}/documents/{}': ['Documents', 'Get Document'],
  'DELETE /datasets/{}/documents/{}': ['Documents', 'Delete Document'],
  'PATCH /datasets/{}/documents/{}': ['Documents', 'Update Document'],
  'GET /datasets/{}/documents/{}/download': ['Documents', 'Download Document'],
  'GET /datasets/{}/documents/{}/indexing-status': ['Documents', 'Get Document Indexing Status'],
  'POST /datasets/{}/documents/{}/update-by-text': ['Documents', 'Update Document by Text'],
  'POST /datasets/{}/documents/{}/update-by-file': ['Documents', 'Update Document by File'],
  'POST /datasets/{}/documents/download-zip': ['Documents', 'Download Documents as ZIP'],
  'PATCH /datasets/{}/documents/status/{}': ['Documents', 'Update Document Status in Batch'],
  'POST /datasets/{}/documents/{}/segments': ['Chunks', 'Create Chunks'],
  'GET /datasets/{}/documents/{}/segments': ['Chunks', 'List Chunks'],
  'GET /datasets/{}/documents/{}/segments/{}': ['Chunks', 'Get Chunk'],
  'POST /datasets/{}/documents/{}/segments/{}': ['Chunks', 'Update Chunk'],
  'DELETE /datasets/{}/documents/{}/segments/{}': ['Chunks', 'Delete Chunk'],
  'POST /datasets/{}/documents/{}/segments/{}/child_chunks': ['Chunks', 'Create Child Chunk'],
  'GET /datasets/{}/documents/{}/segments/{}/child_chunks': ['Chunks', 'List Child Chunks'],
  'PATCH /datasets/{}/documents/{}/segments/{}/child_chunks/{}': ['Chunks', 'Update Child Chunk'],
  'DELETE /datasets/{}/documents/{}/segments/{}/child_chunks/{}': ['Chunks', 'Delete Child Chunk'],
  'POST /datasets/{}/retrieve': ['Knowledge Bases', 'Retrieve Chunks from a Knowledge Base / Test Retrieval'],
  'POST /datasets/tags': ['Tags', 'Create Knowledge Tag'],
  'GET /datasets/tags': ['Tags', 'List Knowledge Tags'],
  'PATCH /datasets/tags': ['Tags', 'Update Knowledge Tag'],
  'DELETE /datasets/tags': ['Tags', 'Delete Knowledge Tag'],
  'POST /datasets/tags/binding': ['Tags', 'Create Tag Binding'],
  'POST /datasets/tags/unbinding': ['Tags', 'Delete Tag Binding'],
  'GET /datasets/{}/tags': ['Tags', 'Get Knowledge Base Tags'],
  'POST /datasets/{}/metadata': ['Metadata', 'Create Metadata Field'],
  'GET /datasets/{}/metadata': ['Metadata', 'List Metadata Fields'],
  'PATCH /datasets/{}/metadata/{}': ['Metadata', 'Update Metadata Field'],
  'DELETE /datasets/{}/metadata/{}': ['Metadata', 'Delete Metadata Field'],
  'GET /datasets/{}/metadata/built-in': ['Metadata', 'Get Built-in Metadata Fields'],
  'POST /datasets/{}/metadata/built-in/{}': ['Metadata', 'Update Built-in Metadata Field'],
  'POST /datasets/{}/documents/metadata': ['Metadata', 'Update Document Metadata in Batch'],
  'GET /workspaces/current/models/model-types/{}': ['Models', 'Get Available Models'],
  'POST /datasets/pipeline/file-upload': ['Knowledge Pipeline', 'Upload Pipeline File'],
  'GET /datasets/{}/pipeline/datasource-plugins': ['Knowledge Pipeline', 'List Datasource Plugins'],
  'POST /datasets/{}/pipeline/datasource/nodes/{}/run': ['Knowledge Pipeline', 'Run Datasource Node'],
  'POST /datasets/{}/pipeline/run': ['Knowledge Pipeline', 'Run Pipeline'],
};

/** Routes of the same tag as their path prefix, where Dify's description has no such operation. */
const PREFIX_TAGS: readonly (readonly [RegExp, string])[] = [
  [/^\/v1\/(datasets|knowledge)/, 'Knowledge Bases'],
  [/^\/v1\/workflows/, 'Workflow Runs'],
  [/^\/v1\/(messages|conversations)/, 'Conversations'],
  [/^\/(v1\/)?files\//, 'Files'],
  [/^\/v1\/apps\/annotation/, 'Annotations'],
  [/^\/v1\/(info|parameters|meta|site)/, 'Applications'],
  [/^\/(api\/)?form\//, 'Human Input form page'],
  [/^\/(health|ready|metrics)$/, 'Operations'],
  [/^\/v1\/(chat\/completions|models)$/, 'OpenAI-compatible'],
  [/^\/mcp\/server\//, 'MCP server'],
];

const COMMON_EVENTS = '`ping` (every few seconds, to keep the connection), `error` (the stream ends: `status`, `code`, `message`)';
const WORKFLOW_EVENTS =
  '`workflow_started`, `node_started`, `node_retry`, `node_finished`, `iteration_started` / `iteration_next` / `iteration_completed`, ' +
  '`loop_started` / `loop_next` / `loop_completed`, `human_input_required` (a Human Input node paused the run: its form and `form_token`), ' +
  '`workflow_paused`, `workflow_finished`';

/** The event types of each streaming operation (`response_mode: streaming`). */
const STREAM_EVENTS: Readonly<Record<string, string>> = {
  'POST /chat-messages':
    '`message` (a piece of the answer), `agent_message` and `agent_thought` (agent apps), `message_file`, `message_replace` (moderation replaced the answer), ' +
    `\`message_end\` (usage and retriever resources); chatflows also ${WORKFLOW_EVENTS}; ${COMMON_EVENTS}`,
  'POST /completion-messages': `\`message\`, \`message_replace\` (moderation replaced the answer), \`message_end\`; ${COMMON_EVENTS}`,
  'POST /workflows/run': `${WORKFLOW_EVENTS}, \`text_chunk\` (output of an answer-like node as it streams); ${COMMON_EVENTS}`,
  'POST /workflows/{}/run': `${WORKFLOW_EVENTS}, \`text_chunk\`; ${COMMON_EVENTS}`,
};

/** `METHOD path` of a route, as the tables above key it. */
export function operationKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url.replace(/^\/v1(?=\/)/, '').replace(/:[A-Za-z_][A-Za-z0-9_]*/g, '{}').replace(/\{[^}]*\}/g, '{}')}`;
}

/** The web app's pages for people and their assets (not operations of an API). */
const WEB_APP_PAGE = /^\/(?:(?:chat|chatbot|completion|workflow|web-app)\/|embed(?:\.min)?\.js$)/;

/**
 * Routes the description leaves out: the form page's stylesheet and script (`/form/-/…`), the web
 * app's pages (`/chat/{code}` …, `/embed.min.js`), the web app's API behind a passport (`/api/…`
 * but the form's own routes; the README describes it), and the console (`/console`, its page and
 * its own JSON API under `/console/api`, for the console's page only; docs/console.md describes it).
 */
export function hiddenRoute(url: string): boolean {
  return url.startsWith('/form/-/') || WEB_APP_PAGE.test(url) || (url.startsWith('/api/') && !url.startsWith('/api/form/')) || url === '/console' || url.startsWith('/console/');
}

/** The tag, summary and (streaming operations) event types of a route; empty when there are none. */
export function describeOperation(method: string, url: string): { tags?: string[]; summary?: string; events?: string } {
  const key = operationKey(method, url);
  const known = url.startsWith('/v1/') ? OPERATIONS[key] : undefined;
  const tag = known?.[0] ?? PREFIX_TAGS.find(([re]) => re.test(url))?.[1];
  const events = url.startsWith('/v1/') ? STREAM_EVENTS[key] : undefined;
  return { ...(tag ? { tags: [tag] } : {}), ...(known ? { summary: known[1] } : {}), ...(events ? { events } : {}) };
}
