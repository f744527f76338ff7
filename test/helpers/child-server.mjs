/**
 * A real Dovetail server in its own process, for kill -9 tests, on the compiled `dist/` (the test
 * run's global setup rebuilds it when a source changed), so that starting one costs what `npm start`
 * costs, not a TypeScript compile. Env: DOVETAIL_DATA_DIR (and DATABASE_URL / DATABASE_SCHEMA),
 * FAKE_OPENAI_URL for the llm nodes (the OpenAI-compatible providers pointed at it, as
 * `openAiCompatibleProviders` does in-process), CHILD_LOG_LEVEL (default silent; its JSON lines go to
 * stdout). Unlike `dovetail serve` it warms no worker and has no graceful shutdown. Prints
 * `listening <url>`.
 */
import { loadConfig } from '../../dist/config.js';
import { createRuntime } from '../../dist/runtime.js';
import { buildServer } from '../../dist/http/server.js';
import { createLogger } from '../../dist/infra/logger.js';
import { readProviderSettings } from '../../dist/llm/provider-settings.js';
import { ProviderRegistry } from '../../dist/llm/provider-registry.js';

const fake = process.env.FAKE_OPENAI_URL;
const providerEnv = { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: fake, OPENAI_API_COMPATIBLE_API_KEY: 'test-key', OPENAI_API_COMPATIBLE_BASE_URL: fake };
const config = loadConfig(process.env, { port: 0, host: '127.0.0.1', seedExamples: false, logLevel: 'silent' });
const runtime = await createRuntime(config, {
  logger: createLogger(process.env.CHILD_LOG_LEVEL ?? 'silent'),
  ...(fake ? { providers: new ProviderRegistry(readProviderSettings((k) => providerEnv[k], undefined)) } : {}),
});
const app = await buildServer(runtime);
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`listening http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
