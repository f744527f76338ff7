/**
 * A real Dovetail server in its own process, for kill -9 tests, on the compiled `dist/` (the test
 * run's global setup rebuilds it when a source changed), so that starting one costs what `npm start`
 * costs, not a TypeScript compile. Env: DOVETAIL_DATA_DIR (and DATABASE_URL / DATABASE_SCHEMA), the
 * providers' settings as for `dovetail serve` (`openAiCompatibleEnv` points them at a fake upstream),
 * CHILD_LOG_LEVEL (default silent; its JSON lines go to stdout). Unlike `dovetail serve` it warms no
 * worker and has no graceful shutdown. Prints `listening <url>`.
 */
import { loadConfig } from '../../dist/config.js';
import { createRuntime } from '../../dist/runtime.js';
import { buildServer } from '../../dist/http/server.js';
import { createLogger } from '../../dist/infra/logger.js';

const config = loadConfig(process.env, { port: 0, host: '127.0.0.1', seedExamples: false, logLevel: 'silent' });
const runtime = await createRuntime(config, { logger: createLogger(process.env.CHILD_LOG_LEVEL ?? 'silent') });
const app = await buildServer(runtime);
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`listening http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
