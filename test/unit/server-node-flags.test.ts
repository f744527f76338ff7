import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { missingServerFlags, SERVER_NODE_FLAGS } from '../../src/cli/node-flags.js';

describe('the Node flags of a server process', () => {
  it('are passed by npm start, before the script', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
    const start = pkg.scripts.start!;
    const script = start.indexOf('bin/dovetail.js');
    expect(script).toBeGreaterThan(0);
    for (const flag of SERVER_NODE_FLAGS) {
      const at = start.indexOf(` ${flag} `);
      expect(at, `npm start passes ${flag}`).toBeGreaterThan(0);
      expect(at).toBeLessThan(script);
    }
  });

  it('are flags this Node accepts on its command line', () => {
    expect(SERVER_NODE_FLAGS.length).toBeGreaterThan(0);
    const run = spawnSync(process.execPath, [...SERVER_NODE_FLAGS, '-e', 'process.exit(0)'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    // an unknown flag fails the same way, so the check above can fail
    expect(spawnSync(process.execPath, ['--no-such-v8-flag-at-all', '-e', '0']).status).not.toBe(0);
  });

  it('are found missing from a process started without them', () => {
    expect(missingServerFlags(['--enable-source-maps'])).toEqual([...SERVER_NODE_FLAGS]);
    expect(missingServerFlags([...SERVER_NODE_FLAGS, '--enable-source-maps'])).toEqual([]);
  });
});
