import { describe, expect, it } from 'vitest';
import { CsvRowError, formatAnnotationCsv, parseAnnotationCsv } from '../../src/annotations/annotation-csv.js';

const parse = (t: string, max = 100) => parseAnnotationCsv(t, max, 'LIMIT');

describe('annotation CSV', () => {
  it('reads RFC 4180: quoted separators, doubled quotes, CRLF or LF, blank rows skipped, extra columns ignored', () => {
    expect(parse('question,answer\r\n"a, b","say ""hi"""\r\n\r\nc,d,extra\n"multi\nline",x')).toEqual([
      { row: 2, question: 'a, b', answer: 'say "hi"' },
      { row: 4, question: 'c', answer: 'd' },
      { row: 5, question: 'multi\nline', answer: 'x' },
    ]);
    // the first row is the header whatever it says (Dify's pd.read_csv)
    expect(parse('问题,答案\nq,a')).toEqual([{ row: 2, question: 'q', answer: 'a' }]);
    expect(parse('\ufeffquestion,answer\nq,a\n')).toEqual([{ row: 2, question: 'q', answer: 'a' }]);
  });

  it('names the row of a missing answer, an unclosed quote and a row past the limit', () => {
    const err = (t: string, max?: number) => {
      try {
        parse(t, max);
      } catch (e) {
        expect(e).toBeInstanceOf(CsvRowError);
        return (e as Error).message;
      }
      throw new Error('parsed');
    };
    expect(err('h\nq')).toBe('row 2: the answer (second column) is empty');
    expect(err('h\nq,a\n"open,a\n')).toBe('row 3: a quoted cell opened on line 3 is never closed');
    expect(err('h\na,1\nb,2\nc,3', 2)).toBe('row 4: a file may hold at most 2 annotations (LIMIT)');
  });

  it('writes what it reads back, formulas escaped', () => {
    const pairs = [
      { question: '=cmd|calc', answer: ' padded ' },
      { question: 'q, "quoted"', answer: 'line\r\nbreak' },
      { question: "'plain", answer: '-1' },
    ];
    const text = formatAnnotationCsv(pairs);
    expect(text).toBe('\ufeffquestion,answer\r\n\'=cmd|calc," padded "\r\n"q, ""quoted""","line\r\nbreak"\r\n\'plain,\'-1\r\n');
    expect(parse(text).map(({ question, answer }) => ({ question, answer }))).toEqual(pairs);
  });

  it('reads a large file in one linear pass', () => {
    const rows = 50_000;
    const text = `question,answer\n${Array.from({ length: rows }, (_, i) => `"q${i}, with ""quotes""",a${i}`).join('\n')}`;
    const out = parse(text, rows);
    expect(out).toHaveLength(rows);
    expect(out[rows - 1]).toEqual({ row: rows + 1, question: `q${rows - 1}, with "quotes"`, answer: `a${rows - 1}` });
    // a quote never closed in a large file fails at once, not after rescanning
    expect(() => parse(`h\n"${'x'.repeat(1_000_000)}`)).toThrow('never closed');
  });
});
