import { describe, expect, it } from 'vitest';
import iconv from 'iconv-lite';
import { cleanText, splitText } from '../../src/knowledge/ingest/chunk.js';
import { AUTOMATIC_RULE, parseProcessRule } from '../../src/knowledge/ingest/process-rule.js';
import { countTokens } from '../../src/text/tokenizer.js';
import { decodeText } from '../../src/knowledge/ingest/parse/decode.js';

const custom = (max: number, overlap: number, separator = '\n\n') =>
  parseProcessRule({ mode: 'custom', rules: { pre_processing_rules: [], segmentation: { separator, max_tokens: max, chunk_overlap: overlap } } }, 4000);

describe('splitting', () => {
  it('automatic: one segment per non-empty line, extra spaces squeezed', () => {
    const text = cleanText('first   line\n\n\n\nsecond \tline\n', AUTOMATIC_RULE);
    expect(splitText(text, AUTOMATIC_RULE)).toEqual(['first line', 'second line']);
  });

  it('a piece over max_tokens is split recursively, every chunk within the limit, with overlap', () => {
    const words = Array.from({ length: 600 }, (_, i) => `w${i}`).join(' ');
    const chunks = splitText(words, custom(60, 10));
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) expect(countTokens(c)).toBeLessThanOrEqual(60);
    // Consecutive chunks share their boundary words.
    const last = chunks[0]!.split(' ').at(-1)!;
    expect(chunks[1]!.split(' ')).toContain(last);
    // Nothing is lost.
    const seen = new Set(chunks.flatMap((c) => c.split(' ')));
    for (let i = 0; i < 600; i++) expect(seen.has(`w${i}`)).toBe(true);
  });

  it('a custom separator given JSON-escaped ("\\\\n") splits on newlines', () => {
    expect(splitText('a\nb', custom(100, 0, '\\n'))).toEqual(['a', 'b']);
  });

  it('process_rule errors name the field', () => {
    expect(() => parseProcessRule({ mode: 'custom' }, 4000)).toThrow('process_rule.rules is required when mode is custom.');
    expect(() => parseProcessRule({ mode: 'custom', rules: { segmentation: { max_tokens: 100, chunk_overlap: 100 } } }, 4000)).toThrow(
      'process_rule.rules.segmentation.chunk_overlap must be smaller than max_tokens.',
    );
    expect(() => parseProcessRule({ mode: 'custom', rules: { segmentation: { max_tokens: 5000 } } }, 4000)).toThrow('between 50 and 4000');
    expect(() => parseProcessRule({ mode: 'fancy' }, 4000)).toThrow('process_rule.mode is invalid');
  });
});

describe('encoding detection', () => {
  it('reads UTF-8, UTF-8 with BOM, UTF-16 LE with BOM and GBK', () => {
    expect(decodeText(Buffer.from('héllo'))).toBe('héllo');
    expect(decodeText(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('bom')]))).toBe('bom');
    expect(decodeText(Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode('wide', 'utf-16le')]))).toBe('wide');
    const zh = '知识库文档的编码检测，这是一段比较长的中文文本，用于测试编码识别是否正确。';
    expect(decodeText(iconv.encode(zh, 'gbk'))).toBe(zh);
  });
});
