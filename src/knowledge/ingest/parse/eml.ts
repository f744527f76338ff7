import PostalMime from 'postal-mime';
import { ParseError } from '../../errors.js';
import { htmlText } from './html.js';
import type { ParseLimits } from './limits.js';

/** An e-mail (RFC 822 `.eml`): its headers that matter (from, to, subject, date), then the body text (the HTML part as text when there is no plain part). */
export async function parseEml(bytes: Buffer, limits: ParseLimits): Promise<string> {
  let mail;
  try {
    mail = await PostalMime.parse(bytes);
  } catch (err) {
    throw new ParseError(`The EML file could not be read: ${(err as Error).message}`);
  }
  const who = (a: { name?: string; address?: string } | undefined) => (a ? (a.name ? `${a.name} <${a.address ?? ''}>` : (a.address ?? '')) : '');
  const head = [
    mail.from ? `From: ${who(mail.from as { name?: string; address?: string })}` : '',
    mail.to?.length ? `To: ${mail.to.map((a) => who(a as { name?: string; address?: string })).join(', ')}` : '',
    mail.subject ? `Subject: ${mail.subject}` : '',
    mail.date ? `Date: ${mail.date}` : '',
  ].filter(Boolean);
  const body = mail.text ?? (mail.html ? htmlText(mail.html, limits) : '');
  return [...head, '', body.trim()].join('\n').trim();
}
