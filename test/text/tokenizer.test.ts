import { describe, expect, it } from 'vitest';
import { countTokens as reference } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens } from '../../src/text/tokenizer.js';

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

describe('countTokens (cl100k_base, piece cache, capped pieces)', () => {
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
      'x'.repeat(120) + ' ' + 'ab'.repeat(60),
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

  it('special-token markers count as the text they are (a provider sees them as text), never throw', () => {
    for (const t of ['a <|endoftext|> b', 'x<|im_start|>', 'a <| b |> c']) {
      expect(countTokens(t)).toBe(reference(t, { disallowedSpecial: new Set() }));
    }
  });

  it('a piece longer than maxPieceChars is counted in slices: exact below the cap, within a token per slice above it', () => {
    const letters = 'thequickbrownfoxjumpsoverthelazydog'.repeat(40); // one 1,400-letter piece
    expect(countTokens(letters, 10_000)).toBe(reference(letters));
    const slices = Math.ceil(letters.length / 128);
    expect(Math.abs(countTokens(letters, 128) - reference(letters))).toBeLessThanOrEqual(slices);
    // A slice never splits a surrogate pair: 300 emoji (600 UTF-16 units) in slices of 5 units.
    const emoji = '😀'.repeat(300);
    expect(countTokens(emoji, 5)).toBe(countTokens('😀😀', 10) * 150);
  });

  it('scales linearly: a run of letters ten times longer costs ten times the slices, not a hundred times the work', () => {
    // The count of a long run is the sum of its slices' counts, so it grows in proportion.
    const unit = 'abcdefghijklmnopqrstuvwxyz'.repeat(10).slice(0, 128);
    const run = unit.repeat(1000);
    expect(countTokens(run)).toBe(countTokens(unit) * 1000);
  });
});
