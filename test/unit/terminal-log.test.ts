import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/infra/logger.js';
import { terminalLine } from '../../src/infra/terminal-log.js';

/** A stream that collects what is written; `isTTY` as a terminal's stdout has it. */
function sink(isTTY: boolean): { stream: Writable & { isTTY?: boolean }; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  }) as Writable & { isTTY?: boolean };
  if (isTTY) stream.isTTY = true;
  return { stream, text: () => text };
}

describe('logs on a terminal', () => {
  it('are lines for people when the destination is a terminal, JSON otherwise; redaction applies to both', async () => {
    const tty = sink(true);
    const logger = createLogger('info', tty.stream);
    logger.info({ port: 5001, authorization: 'Bearer app-secret', where: 'a b' }, 'listening');
    logger.flush();
    await new Promise((r) => setImmediate(r));
    expect(tty.text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}listening {2}port=5001 authorization=\[redacted\] where="a b"\n$/);

    const pipe = sink(false);
    createLogger('info', pipe.stream).info({ port: 5001 }, 'listening');
    await new Promise((r) => setImmediate(r));
    expect(JSON.parse(pipe.text())).toMatchObject({ level: 30, msg: 'listening', port: 5001 });
  });

  it('shows an error with its stack, and passes a line that is not JSON as it is', () => {
    const line = terminalLine(JSON.stringify({ level: 50, time: 0, pid: 1, hostname: 'h', msg: 'failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } }));
    expect(line).toBe('00:00:00.000 ERROR failed\nError: boom\n    at x\n');
    expect(terminalLine('plain text')).toBe('plain text\n');
  });
});
