import msgreader from '@kenjiuno/msgreader';

// a CommonJS module with `exports.default`: Node's ESM loader gives the exports object (the class
// is its `default`); loaders that honour `__esModule` give the class itself
const MsgReader = (typeof msgreader === 'function' ? msgreader : msgreader.default) as typeof msgreader.default;
import { ParseError } from '../../errors.js';

/** An Outlook message (`.msg`): sender, recipients and subject, then the body text. */
export function parseMsg(bytes: Buffer): string {
  let data;
  try {
    const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    data = new MsgReader(ab).getFileData();
  } catch (err) {
    throw new ParseError(`The MSG file could not be read: ${(err as Error).message}`);
  }
  if (data.error) throw new ParseError(`The MSG file could not be read: ${data.error}`);
  const from = data.senderName ? `${data.senderName}${data.senderEmail ? ` <${data.senderEmail}>` : ''}` : (data.senderEmail ?? '');
  const to = (data.recipients ?? [])  .map((r: { name?: string; email?: string }) => r.name ?? r.email ?? '').filter(Boolean);
  const head = [from ? `From: ${from}` : '', to.length ? `To: ${to.join(', ')}` : '', data.subject ? `Subject: ${data.subject}` : ''].filter(Boolean);
  return [...head, '', (data.body ?? '').trim()].join('\n').trim();
}
