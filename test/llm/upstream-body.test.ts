import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { UpstreamBody } from '../../src/llm/upstream-body.js';

/** A body with a recording input (the parser side). */
function setUp() {
  const calls: string[] = [];
  let finished = 0;
  const body = new UpstreamBody(
    {
      pause: () => calls.push('pause'),
      resume: () => calls.push('resume'),
      abort: (reason) => calls.push(`abort ${reason.name}`),
    },
    () => finished++,
  );
  return { body, calls, finished: () => finished };
}

const text = (r: ReadableStreamReadResult<Uint8Array>) => (r.done ? 'done' : Buffer.from(r.value).toString());
const microtask = () => new Promise<void>((r) => queueMicrotask(r));

describe('UpstreamBody', () => {
  it('hands on what one read of the parser brought as one chunk, to a waiting read or a later one, then the end (once)', async () => {
    const { body, finished } = setUp();
    const waiting = body.read();
    body.write(Buffer.from('a'));
    body.write(Buffer.from('b'));
    expect(text(await waiting)).toBe('ab');
    body.write(Buffer.from('c'));
    await microtask();
    body.write(Buffer.from('d'));
    body.end();
    expect(text(await body.read())).toBe('c');
    expect(text(await body.read())).toBe('d');
    expect(text(await body.read())).toBe('done');
    expect(text(await body.read())).toBe('done');
    expect(finished()).toBe(1);
  });

  it('pauses the parser over a megabyte unread and resumes it when a read takes it below', async () => {
    const { body, calls } = setUp();
    body.write(Buffer.alloc(1 << 20));
    await microtask();
    expect(calls).toEqual(['pause']);
    await body.read();
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('a failure is read after the bytes that came before it; a waiting read gets it at once', async () => {
    const { body, finished } = setUp();
    body.write(Buffer.from('partial'));
    body.error(new Error('reset'));
    expect(text(await body.read())).toBe('partial');
    await expect(body.read()).rejects.toThrow('reset');
    expect(finished()).toBe(1);

    const other = setUp();
    const waiting = other.body.read();
    other.body.error(new Error('refused'));
    await expect(waiting).rejects.toThrow('refused');
  });

  it('cancel ends the request, drops what is unread and ends a waiting read', async () => {
    const { body, calls, finished } = setUp();
    body.write(Buffer.from('x'));
    await microtask();
    await body.cancel();
    expect(calls).toContain('abort AbortError');
    expect(text(await body.read())).toBe('done');
    const other = setUp();
    const waiting = other.body.read();
    await other.body.cancel();
    expect(text(await waiting)).toBe('done');
    expect(finished() + other.finished()).toBe(2);
    // bytes after the cancel are dropped
    body.write(Buffer.from('late'));
    expect(text(await body.read())).toBe('done');
  });

  it('inflates a gzip body, and reads as a web stream for a Response', async () => {
    const { body } = setUp();
    body.decode('gzip');
    const response = new Response(body.stream);
    body.write(zlib.gzipSync('{"ok":true}'));
    body.end();
    expect(await response.json()).toEqual({ ok: true });
  });
});
