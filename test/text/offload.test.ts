import { afterAll, describe, expect, it } from 'vitest';
import { isMainThread } from 'node:worker_threads';
import { TextOffload } from '../../src/text/offload.js';
import { countTokens } from '../../src/text/tokenizer.js';

const offload = new TextOffload({ maxPieceChars: 128, workerMinChars: 1000 });
afterAll(() => offload.close());

describe('TextOffload', () => {
  it('counts on the worker thread exactly as inline, for texts over workerMinChars', async () => {
    const texts = ['Hello, world!', 'x'.repeat(5000), '中文分词测试，这是一个句子。'.repeat(200), "It's THEY'RE and we'VE done.\n\n".repeat(100)];
    const expected = texts.map((t) => countTokens(t, 128));
    expect(await offload.countTokens(texts)).toEqual(expected);
    expect(await offload.countTokensOf(texts[1]!)).toBe(expected[1]);
    // Small work stays inline (the answer is the same either way).
    expect(await offload.countTokens(['tiny'])).toEqual([countTokens('tiny')]);
    expect(isMainThread).toBe(true);
  });

  it('serves many large requests at once, each with its own answer', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `${'word '.repeat(300 + i)}`);
    const answers = await Promise.all(texts.map((t) => offload.countTokensOf(t)));
    expect(answers).toEqual(texts.map((t) => countTokens(t)));
  });
});
