import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/fixtures.js';
import { tsFiles } from '../helpers/import-graph.js';
import { isRunEvent, isTerminal, RUN_EVENTS, TERMINAL_RUN_EVENTS } from '../../src/runs/run-events.js';

/** Where run frames are built: the run loop and service, the engine's node events, the chatflow generator. */
const WRITERS = [path.join(PROJECT_ROOT, 'src/runs'), path.join(PROJECT_ROOT, 'src/engine')];
const EXTRA = [path.join(PROJECT_ROOT, 'src/http/generators/chatflow-generator.ts'), path.join(PROJECT_ROOT, 'src/http/run-stream.ts'), path.join(PROJECT_ROOT, 'src/cli/run-actions.ts')];

/** Event names spelled in source: `event: 'x'`, `#emit('x'`, `lastSeqOf(id, 'x')`, and the containers' `` `${kind}_started` `` (loop, iteration). */
function spelledEvents(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of [...WRITERS.flatMap((d) => tsFiles(d)), ...EXTRA]) {
    if (file.endsWith('run-events.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const rel = path.relative(PROJECT_ROOT, file);
    for (const m of text.matchAll(/\bevent: '([a-z_]+)'|#emit\('([a-z_]+)'|lastSeqOf\([^,]+, '([a-z_]+)'\)/g)) {
      const name = m[1] ?? m[2] ?? m[3]!;
      if (!found.has(name)) found.set(name, rel);
    }
    if (text.includes('`${kind}_started`')) for (const kind of ['loop', 'iteration']) for (const s of ['started', 'next', 'completed']) found.set(`${kind}_${s}`, rel);
  }
  return found;
}

describe('run events: one vocabulary', () => {
  it('every event name written or matched in the run code is in RUN_EVENTS', () => {
    const spelled = spelledEvents();
    expect(spelled.size).toBeGreaterThan(10); // the scan sees the run loop's frames
    const unknown = [...spelled].filter(([name]) => !isRunEvent(name)).map(([name, file]) => `${name} (${file})`);
    expect(unknown).toEqual([]);
  });

  it('isTerminal is true for workflow_finished and workflow_paused only', () => {
    expect(RUN_EVENTS.filter((e) => isTerminal(e)).sort()).toEqual([...TERMINAL_RUN_EVENTS].sort());
    expect(TERMINAL_RUN_EVENTS).toEqual(['workflow_finished', 'workflow_paused']);
    for (const other of ['workflow_started', 'error', 'message_end', 'ping', undefined, null, 3]) expect(isTerminal(other)).toBe(false);
  });

  it('no module outside run-events.ts keeps its own list of terminal events', () => {
    const own = [...WRITERS.flatMap((d) => tsFiles(d)), ...EXTRA]
      .filter((f) => !f.endsWith('run-events.ts'))
      .filter((f) => /\[\s*'workflow_finished',\s*'workflow_paused'\s*\]|\[\s*'workflow_paused',\s*'workflow_finished'\s*\]/.test(readFileSync(f, 'utf8')))
      .map((f) => path.relative(PROJECT_ROOT, f));
    expect(own).toEqual([]);
  });
});
