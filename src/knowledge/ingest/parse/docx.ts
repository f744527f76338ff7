import mammoth from 'mammoth';
import { ParseError } from '../../errors.js';

/** DOCX body text (paragraphs separated by blank lines). */
export async function parseDocx(bytes: Buffer): Promise<string> {
  try {
    const { value } = await mammoth.extractRawText({ buffer: bytes });
    return value;
  } catch (err) {
    throw new ParseError(`The DOCX file could not be read: ${(err as Error).message}`);
  }
}
