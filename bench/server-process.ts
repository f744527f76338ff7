/**
 * Runs Dovetail (the real server, fresh SQLite) in its own process for benchmarks, with the env
 * given as JSON in argv[2]; imports a completion test app and sends `{url, apiKey}` over IPC.
 */
import { benchServer } from './lib.js';
import { completionApp } from '../test/helpers/apps.js';

const s = await benchServer(JSON.parse(process.argv[2] ?? '{}') as Record<string, string>);
const app = await s.runtime.apps.importDsl(completionApp());
const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
process.send?.({ url: s.url, apiKey });
process.on('disconnect', () => void s.close().then(() => process.exit(0)));
