/**
 * Runs Dovetail (the real server, fresh SQLite) in its own process for benchmarks: argv[2] is JSON
 * `{env, dsl}`; imports the DSL and sends `{url, apiKey}` over IPC.
 */
import { benchServer } from './lib.js';

const { env, dsl } = JSON.parse(process.argv[2] ?? '{}') as { env: Record<string, string>; dsl: string };
const s = await benchServer(env);
const app = await s.runtime.apps.importDsl(dsl);
const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
process.send?.({ url: s.url, apiKey });
process.on('disconnect', () => void s.close().then(() => process.exit(0)));
