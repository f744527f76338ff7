/**
 * A real Dovetail server in its own process, for kill -9 tests. Env: DOVETAIL_DATA_DIR (and
 * DATABASE_URL / DATABASE_SCHEMA), FAKE_OPENAI_URL for the llm nodes, CHILD_LOG_LEVEL (default
 * silent; its JSON lines go to stdout). Prints `listening <url>`.
 */
import { loadConfig } from '../../src/config.js';
import { createRuntime } from '../../src/runtime.js';
import { buildServer } from '../../src/http/server.js';
import { createLogger } from '../../src/infra/logger.js';
import { openAiCompatibleProviders } from './openai-providers.js';

const config = loadConfig(process.env, { port: 0, host: '127.0.0.1', seedExamples: false, logLevel: 'silent' });
const runtime = await createRuntime(config, { logger: createLogger(process.env.CHILD_LOG_LEVEL ?? 'silent'), providers: openAiCompatibleProviders(process.env.FAKE_OPENAI_URL!) });
const app = await buildServer(runtime);
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`listening http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
