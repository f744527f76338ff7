import { describe, expect, it } from 'vitest';
import { cleanSubject, formLink, formMail } from '../../src/mail/form-mail.js';
import { redactUrl } from '../../src/infra/logger.js';
import { formPage } from '../../src/web/form-page.js';
import type { WebFormView } from '../../src/forms/form-service.js';
import { resolveValues, type SubmissionContext } from '../../src/forms/submission.js';
import type { FormInput } from '../../src/forms/form-definition.js';

describe('form mail content', () => {
  it('strips tags and folds CR/LF in the subject', () => {
    expect(cleanSubject('Hi <b>there</b>\r\nBcc: x@y.z\n')).toBe('Hi there Bcc: x@y.z');
  });

  it('fills {{#url#}} and renders Markdown with raw HTML and javascript: links neutralised', () => {
    const link = formLink('https://f.example', 'tok_-1');
    const m = formMail(['Review'], ['Go **now**: [form](', ')\n\n<img src=x onerror=alert(1)> [x](javascript:alert(1))'], link);
    expect(link).toBe('https://f.example/form/tok_-1');
    expect(m.html).toContain('<strong>now</strong>');
    expect(m.html).toContain('<a href="https://f.example/form/tok_-1" rel="noopener noreferrer">form</a>');
    expect(m.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(m.html).not.toContain('href="javascript:');
    expect(m.text).toContain('Go **now**: [form](https://f.example/form/tok_-1)');
  });

  it('puts the link only between the pieces, and renders remote images as links (data: images stay)', () => {
    const m = formMail(['Review {{#url#}}'], ['![pixel](https://evil.example/p.png?t={{#url#}}) ', ' ![](https://evil.example/q.png) ![dot](data:image/png;base64,AAAA)'], 'https://f.example/form/T');
    expect(m.subject).toBe('Review {{#url#}}');
    expect(m.text.split('https://f.example/form/T').length).toBe(2);
    expect(m.html).not.toMatch(/<img[^>]+src="https?:/);
    expect(m.html).toContain('<a href="https://evil.example/p.png?t=%7B%7B#url#%7D%7D" rel="noopener noreferrer">pixel</a>');
    expect(m.html).toContain('<a href="https://evil.example/q.png" rel="noopener noreferrer">https://evil.example/q.png</a>');
    expect(m.html).toContain('<img src="data:image/png;base64,AAAA" alt="dot">');
  });
});

describe('form page', () => {
  const form: WebFormView = {
    appId: 'a',
    formId: 'f',
    nodeTitle: '<Title>',
    form_content: 'Hello {{#$output.note#}}',
    inputs: [
      { type: 'paragraph', output_variable_name: 'note' },
      { type: 'select', output_variable_name: 'pick', options: ['"a"', '<b>'] },
    ],
    resolved_default_values: { note: '</textarea><script>x()</script>' },
    user_actions: [{ id: 'go', title: '<Go>', button_style: 'primary" onclick="x' }],
    expiration_time: 1_800_000_000,
  };

  it('escapes everything that comes from the DSL or the run', () => {
    const html = formPage('t"k', form);
    expect(html).not.toContain('<script>x()');
    expect(html).toContain('&lt;/textarea&gt;&lt;script&gt;x()&lt;/script&gt;');
    expect(html).toContain('<h1>&lt;Title&gt;</h1>');
    expect(html).toContain('<option value="&quot;a&quot;">&quot;a&quot;</option>');
    expect(html).toContain('class="default">&lt;Go&gt;</button>');
    expect(html).toContain('action="/form/t%22k"');
    // the note field stands where its placeholder is, inside the content (as Dify's form shows it)
    expect(html).toMatch(/<div class="content"><p>Hello<\/p>\n+<div class="field"><label for="f0">note<\/label><textarea id="f0" name="input\.note"/);
    expect(html).not.toContain('[note]');
  });

  it('a file list is optional (the API accepts []); a single file is required', () => {
    const html = formPage('t', {
      ...form,
      form_content: 'Attach: {{#$output.docs#}}',
      inputs: [
        { type: 'file-list', output_variable_name: 'docs', number_limits: 2 },
        { type: 'file', output_variable_name: 'doc' },
      ],
    });
    expect(html).toMatch(/<input type="file" id="f0" name="input\.docs" multiple data-max-files="2" data-field [^>]*><p class="hint" id="f0-hint">Up to 2 files\. Optional\./);
    expect(html).toMatch(/<input type="file" id="f1" name="input\.doc" required /);
  });
});

describe('request logs', () => {
  it('never show a form token', () => {
    expect(redactUrl('/form/SECRET123')).toBe('/form/[redacted]');
    expect(redactUrl('/api/form/human_input/SECRET123/files/upload')).toBe('/api/form/human_input/[redacted]/files/upload');
    expect(redactUrl('/v1/form/human_input/SECRET123?x=1')).toBe('/v1/form/human_input/[redacted]?x=1');
    expect(redactUrl('/form/-/form.js')).toBe('/form/-/form.js');
  });
});

describe('submitted values of the input types outside Dify\'s current schema', () => {
  // text and number fields never reach the file store: the context is not used for them
  const ctx = {} as SubmissionContext;
  const inputs = [
    { type: 'text_input', output_variable_name: 'title' },
    { type: 'number', output_variable_name: 'score' },
  ] as unknown as FormInput[];

  it('takes a string for an older text_input and a finite number for a number', async () => {
    expect(await resolveValues(inputs, { title: 'Q3', score: 4.5 }, ctx)).toEqual({ title: 'Q3', score: 4.5 });
  });

  it('refuses other values naming the field, as invalid_form_data', async () => {
    await expect(resolveValues(inputs, { title: { a: 1 }, score: 1 }, ctx)).rejects.toMatchObject({ code: 'invalid_form_data', status: 400, message: 'title must be a string' });
    await expect(resolveValues(inputs, { title: '', score: '4' }, ctx)).rejects.toMatchObject({ code: 'invalid_form_data', message: 'score must be a number' });
    await expect(resolveValues(inputs, { title: '', score: Number.NaN }, ctx)).rejects.toMatchObject({ message: 'score must be a number' });
  });
});
