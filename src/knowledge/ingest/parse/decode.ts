import chardet from 'chardet';
import iconv from 'iconv-lite';

/**
 * Bytes to text with encoding detection: a BOM wins, then valid UTF-8, then chardet's best guess
 * (GBK, Shift_JIS, windows-1252, UTF-16 …) decoded with iconv-lite.
 */
export function decodeText(bytes: Buffer): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return bytes.subarray(3).toString('utf8');
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return iconv.decode(bytes.subarray(2), 'utf-16le');
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return iconv.decode(bytes.subarray(2), 'utf-16be');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const guess = chardet.detect(bytes);
    const enc = guess && iconv.encodingExists(guess) ? guess : 'windows-1252';
    return iconv.decode(bytes, enc);
  }
}
