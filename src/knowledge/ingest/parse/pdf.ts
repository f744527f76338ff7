import { extractText, getDocumentProxy } from 'unpdf';
import { ParseError } from '../../errors.js';

/** PDF text, one page after another (pdf.js through unpdf). */
export async function parsePdf(bytes: Buffer): Promise<string> {
  let pdf;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes));
  } catch (err) {
    throw new ParseError(`The PDF could not be read: ${(err as Error).message}`);
  }
  const { text } = await extractText(pdf, { mergePages: false });
  return (text as string[]).map((t) => t.trim()).join('\n\n');
}
