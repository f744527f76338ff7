import mammoth from 'mammoth';
import { ParseError } from '../../errors.js';
import { TextBudget, type ParseLimits } from './limits.js';
import { ZipArchive } from './zip-entries.js';

/** DOCX body text (paragraphs separated by blank lines). The container is checked first (`ZipArchive.verify`). */
export async function parseDocx(bytes: Buffer, limits: ParseLimits): Promise<string> {
  ZipArchive.open(bytes, 'DOCX', limits).verify();
  let text: string;
  try {
    text = (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch (err) {
    throw new ParseError(`The DOCX file could not be read: ${(err as Error).message}`);
  }
  return new TextBudget(limits, 'DOCX').take(text);
}
