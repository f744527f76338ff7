import { ParseError } from '../../errors.js';
import { decodeText } from './decode.js';

/** Plain text and Markdown (kept as written: headings help the splitter). */
export function parseText(bytes: Buffer): string {
  if (bytes.includes(0)) {
    // UTF-16 without a BOM is the one legitimate source of NUL bytes in a text file.
    const text = decodeText(bytes);
    if (text.includes('\u0000')) throw new ParseError('The file is not a text file (it contains binary data).');
    return text;
  }
  return decodeText(bytes);
}
