import { describe, expect, it } from 'vitest';
import { countTokens as reference } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens } from '../../src/knowledge/tokens.js';

/** Deterministic fuzz: strings drawn from an alphabet that mixes every pre-tokenizer class. */
function fuzz(count: number, seed: number): string[] {
  let x = seed;
  const rnd = (n: number) => ((x = (x * 1103515245 + 12345) & 0x7fffffff) % n);
  const alphabet = [
    ...'abcXYZ019 \t\n\r.,;:!?\'"()[]{}<>|-_=+*/\\#@$%^&~`',
    "'s", "'T", "'ll", "'RE", ' the', '  ', '   ', '\n\n', '\r\n', ' \n', '\u00a0', '\u3000',
    '中文', '日本語', 'ｶﾀｶﾅ', '한국어', 'é', 'e\u0301', 'ß', 'İ', 'ﬁ', '٣', '²', 'Ⅻ',
    '😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '\u200d', '\ufeff', '\ud800', '\udc00', '𝔘', '\u0000',
  ];
  return Array.from({ length: count }, () => Array.from({ length: 1 + rnd(40) }, () => alphabet[rnd(alphabet.length)]).join(''));
}

describe('countTokens (cl100k_base, piece cache)', () => {
  it('equals gpt-tokenizer on prose, code, numbers, contractions, unicode, emoji and whitespace runs', () => {
    const texts = [
      '',
      'a',
      ' ',
      '   ',
      '\n',
      'Hello, world!',
      "I'm sure they'll say it's THEY'RE and we'VE done. Don't.",
      'The quick brown fox jumps over the lazy dog.   Trailing spaces   ',
      'tabs\tand\t\tmore\t\t\ttabs\t',
      'line one\nline two\r\nline three\n\n\n\nfour \n five\n',
      'numbers 1 12 123 1234 12345 1234567890 3.14159 -42 1e10 0x1F',
      'function f(x) {\n  return x * 2; // double\n}\n\n    indented();\n',
      '## Heading\n\n- item **bold** _it_ `code` [link](https://example.com/a?b=c&d=e)\n',
      '中文分词测试，这是一个句子。日本語のテキストです。한국어 문장입니다.',
      'emoji 😀😀 👍🏽 👨‍👩‍👧 🇫🇷🇩🇪 mixed with text😀and more',
      'combining e\u0301 and precomposed é, ß, İstanbul, ﬁne, Ⅻ, ٣, ²',
      'zero\u200dwidth\ufeffbom and nbsp\u00a0here and ideographic\u3000space',
      'lone surrogates \ud800 and \udc00x end',
      'punctuation!!! ??? ... --- ***\n\n\n...\n',
      '\n\n\n   \n\t\n',
      'x'.repeat(300) + ' ' + 'ab'.repeat(200),
    ];
    for (const t of texts) expect(countTokens(t), JSON.stringify(t.slice(0, 60))).toBe(reference(t));
  });

  it('equals gpt-tokenizer on fuzzed mixtures, twice (cold and cached pieces)', () => {
    const texts = fuzz(3000, 42);
    for (let round = 0; round < 2; round++) {
      for (const t of texts) expect(countTokens(t), JSON.stringify(t)).toBe(reference(t));
    }
    const joined = texts.join('');
    expect(countTokens(joined)).toBe(reference(joined));
  });

  it('texts with special-token markers behave exactly as gpt-tokenizer (it rejects them)', () => {
    for (const t of ['a <|endoftext|> b', 'x<|im_start|>']) {
      expect(() => reference(t)).toThrow();
      expect(() => countTokens(t)).toThrow();
    }
    expect(countTokens('a <| b |> c')).toBe(reference('a <| b |> c'));
  });
});
