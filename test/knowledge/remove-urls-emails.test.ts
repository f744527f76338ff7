/**
 * Issue 39: cleanText's "remove URLs and emails" rule used Dify's e-mail pattern as a JavaScript
 * regular expression, which backtracks: 150 KB of `a` took 14–47 s, 1 MB about half an hour. The
 * rule is now a scanner with the same matches (checked against the pattern on many random texts)
 * that looks at each character a bounded number of times.
 */
import { describe, expect, it } from 'vitest';
import { cleanText } from '../../src/knowledge/ingest/chunk.js';
import { parseProcessRule } from '../../src/knowledge/ingest/process-rule.js';
import { removeEmails } from '../../src/knowledge/ingest/remove-urls-emails.js';

/** Dify's pattern (api/core/indexing_runner.py, CleanProcessor): the reference for small inputs. */
const DIFY_EMAIL = /([a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+)/g;
const rule = parseProcessRule({ mode: 'custom', rules: { pre_processing_rules: [{ id: 'remove_urls_emails', enabled: true }], segmentation: { max_tokens: 500 } } }, 4000);

describe('remove_urls_emails', () => {
  it('removes exactly what Dify’s pattern matches, on 20,000 random texts over the characters that matter', () => {
    const alphabet = ['a', 'b', 'Z', '0', '_', '.', '+', '-', '@', ' ', '\n', 'é', '/', ':'];
    let x = 12345;
    const rand = (n: number) => {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      return x % n;
    };
    for (let i = 0; i < 20_000; i++) {
      const len = 1 + rand(40);
      let t = '';
      for (let j = 0; j < len; j++) t += alphabet[rand(alphabet.length)];
      expect(removeEmails(t), JSON.stringify(t)).toBe(t.replace(DIFY_EMAIL, ''));
    }
  });

  it('cases the pattern decides by its leftmost, greedy match', () => {
    const cases = ['ann@example.com', 'a@b.c_d@e.f', 'x@y.z@w.v', 'a@b', 'a@.b', '@b.c', 'a@b.', 'a.b+c@d-e.f.g-h. tail', 'ann@example.com.', 'one@two.three@four.five', 'mail: ann@ex.com, bob@ex.org!'];
    for (const t of cases) expect(removeEmails(t), t).toBe(t.replace(DIFY_EMAIL, ''));
  });

  it('1 MB inputs that made the pattern backtrack are cleaned (correctly) in one pass', () => {
    const MB = 1 << 20;
    const a = 'a'.repeat(MB);
    expect(cleanText(a, rule)).toBe(a);
    // a long local part that almost reaches an e-mail, then one that does
    const near = `${'a'.repeat(MB)}@nodot ${'b'.repeat(MB)}@x.io`;
    expect(cleanText(near, rule)).toBe(`${'a'.repeat(MB)}@nodot `);
    const ats = 'a@'.repeat(MB / 2);
    expect(cleanText(ats, rule)).toBe(ats);
    const mails = 'x@y.zz '.repeat(MB / 7);
    expect(cleanText(mails, rule)).toBe(' '.repeat(MB / 7));
    expect(cleanText(`see https://example.com/${'p'.repeat(MB)} now`, rule)).toBe('see  now');
  });
});
