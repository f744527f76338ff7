import { describe, expect, it } from 'vitest';
import { splitReasoning, ThinkStreamFilter } from '../../src/engine/nodes/think-tags.js';
import { ThinkWrap } from '../../src/llm/think-wrap.js';

/** Feeds `text` to a filter in pieces of `size` characters and returns what it let through. */
function filtered(text: string, size: number): string {
  const f = new ThinkStreamFilter();
  let out = '';
  for (let i = 0; i < text.length; i += size) out += f.feed(text.slice(i, i + size));
  return out + f.end();
}

describe('<think> reasoning (llm node reasoning_format: separated)', () => {
  it('splits the answer from closed blocks, attributes and case too; folds blank lines; trims', () => {
    expect(splitReasoning('<think>\nstep one\n</think>\n\nThe answer.')).toEqual({ text: 'The answer.', reasoning: 'step one' });
    expect(splitReasoning('A<THINK reason="x">r1</Think>B\n\n\n\nC<think>r2</think>')).toEqual({ text: 'AB\n\nC', reasoning: 'r1\nr2' });
    expect(splitReasoning('no reasoning here')).toEqual({ text: 'no reasoning here', reasoning: '' });
    // A truncated generation: the open block is reasoning, never answer.
    expect(splitReasoning('Answer first. <think>cut off mid')).toEqual({ text: 'Answer first.', reasoning: 'cut off mid' });
    // `<think` without `>` is text.
    expect(splitReasoning('a <think b')).toEqual({ text: 'a <think b', reasoning: '' });
  });

  it('the stream filter gives the same answer whatever the piece size, holding back only tag beginnings', () => {
    const text = '<think>\nLet me see: 2 < 3 and </thin is not a tag.\n</think>\n\nTwo is less <b>than</b> three.<think>more</think> Done.';
    const expected = splitReasoning(text).text.replace(/\s+/g, ' ');
    for (const size of [1, 2, 3, 5, 7, 11, 1000]) expect(filtered(text, size).replace(/\s+/g, ' '), `size ${size}`).toBe(expected);
    const f = new ThinkStreamFilter();
    expect(f.feed('Hello <thi')).toBe('Hello ');
    expect(f.feed('nk>secret</th')).toBe('');
    expect(f.feed('ink> world')).toBe(' world');
    expect(f.feed(' <b')).toBe(' <b');
    // An unclosed block at the end is dropped.
    expect(filtered('visible<think>never shown', 4)).toBe('visible');
  });

  it('is linear on hostile input (many unclosed tags)', () => {
    const hostile = '<think'.repeat(50_000) + '>' + 'x'.repeat(10);
    expect(splitReasoning(hostile).reasoning).toBe('x'.repeat(10));
    expect(splitReasoning('<think>'.repeat(50_000)).text).toBe('');
    // The stream filter holds a `<think` without `>` back only so long, then shows it as text.
    const long = '<think' + 'y'.repeat(100_000);
    expect(filtered(long, 3)).toBe(long);
  });

  it('providers wrap reasoning as Dify’s plugins do: <think>\\n…\\n</think> then the answer', () => {
    const w = new ThinkWrap();
    expect(w.next('a', undefined) + w.next('b', undefined) + w.next(undefined, 'X') + w.next(undefined, 'Y') + w.end()).toBe('<think>\nab\n</think>XY');
    const open = new ThinkWrap();
    expect(open.next('only reasoning', undefined) + open.end()).toBe('<think>\nonly reasoning\n</think>');
    expect(new ThinkWrap().next(undefined, 'plain')).toBe('plain');
  });
});
