import { renderMailMarkdown } from '../web/markdown.js';

export interface MailContent {
  readonly subject: string;
  readonly html: string;
  readonly text: string;
}

/** A subject as Dify's newest code sends it: tags removed, CR/LF folded to spaces, trimmed (at most 998 characters). */
export function cleanSubject(subject: string): string {
  return subject
    .replace(/<[^>]*>/g, '')
    .replace(/[\r\n]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 998);
}

/** The recipient's personal form link. */
export function formLink(appWebUrl: string, token: string): string {
  return `${appWebUrl}/form/${encodeURIComponent(token)}`;
}

/**
 * One recipient's mail: the rendered pieces joined by the link (where the DSL's template had
 * `{{#url#}}`, never inside a run value), the body rendered from Markdown to sanitised HTML (raw
 * HTML escaped, remote images as links: nothing is fetched when the mail is opened), and the
 * Markdown source as the plain-text part.
 */
export function formMail(subject: readonly string[], body: readonly string[], link: string): MailContent {
  const text = body.join(link);
  const html = `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5;color:#1f2328">${renderMailMarkdown(text)}</body></html>`;
  return { subject: cleanSubject(subject.join(link)), html, text };
}

