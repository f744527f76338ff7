import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Runtime } from './runtime.js';

export interface SeededApp {
  readonly name: string;
  readonly mode: string;
  readonly appId: string;
  readonly apiKey: string;
}

/** Imports every `examples/*.yml` into an empty database and returns their new keys. */
export async function seedExamples(runtime: Runtime, dir: string): Promise<SeededApp[]> {
  if ((await runtime.apps.count()) > 0) return [];
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  } catch {
    return [];
  }
  const out: SeededApp[] = [];
  const workspaceId = await runtime.apps.workspaceId();
  for (const f of files) {
    try {
      const app = await runtime.apps.importDsl(readFileSync(path.join(dir, f), 'utf8'));
      const { apiKey } = await runtime.keys.create('app', workspaceId, app.id);
      out.push({ name: app.name, mode: app.mode, appId: app.id, apiKey });
    } catch (err) {
      runtime.logger.warn({ file: f, err: (err as Error).message }, 'example app not imported');
    }
  }
  return out;
}
