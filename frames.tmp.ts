import { startFakeOpenAI } from './test/helpers/fake-openai.js';
import { benchServer } from './bench/lib.js';
import { completionApp } from './test/helpers/apps.js';
const fake = await startFakeOpenAI({ reply: 'tok '.repeat(2000), chunkSize: 4 });
const s = await benchServer({ OPENAI_API_KEY: 'sk', OPENAI_BASE_URL: fake.baseUrl });
const app = await s.runtime.apps.importDsl(completionApp());
const { apiKey } = await s.runtime.keys.create('app', app.workspaceId, app.id);
for (let i = 0; i < 3; i++) {
  const res = await fetch(`${s.url}/v1/completion-messages`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: { topic: 'x' }, user: 'u', response_mode: 'streaming' }) });
  const text = await res.text();
  const frames = text.split('\n\n').filter(Boolean);
  console.log('frames', frames.length, frames.slice(0, 3).map((f) => f.slice(0, 120)));
}
await s.close(); await fake.close();
