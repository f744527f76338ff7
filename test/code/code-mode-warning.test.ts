import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRuntime } from '../../src/runtime.js';

/** What `serve` logs when it warms the code sandbox, per CODE_EXECUTION_MODE. */
async function startupWarnings(mode: string): Promise<string[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dovetail-code-mode-'));
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) });
  const runtime = await createRuntime(loadConfig({ DOVETAIL_DATA_DIR: dataDir, DOVETAIL_CONFIG: undefined as unknown as string, CODE_EXECUTION_MODE: mode }, { seedExamples: false }), { logger });
  try {
    const before = lines.length; // other start-up warnings (mail not configured, …) come before
    runtime.warmWorkers();
    return lines.slice(before);
  } finally {
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('CODE_EXECUTION_MODE at start-up', () => {
  it('process mode is warned about as unsafe', async () => {
    expect(await startupWarnings('process')).toEqual([expect.stringMatching(/^CODE_EXECUTION_MODE=process: .*unsafe/)]);
  });

  it('sandbox mode (the default) warns about nothing: both languages are sandboxed', async () => {
    expect(await startupWarnings('sandbox')).toEqual([]);
  });

  it('another value fails at boot naming the setting', () => {
    expect(() => loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, CODE_EXECUTION_MODE: 'docker' }, {})).toThrow('CODE_EXECUTION_MODE must be sandbox or process, got "docker"');
  });
});
