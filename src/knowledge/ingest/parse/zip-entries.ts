import JSZip from 'jszip';
import { ParseError } from '../../errors.js';

/** Opens an OOXML / EPUB container; `kind` names the format in the error. */
export async function openZip(bytes: Buffer, kind: string): Promise<JSZip> {
  try {
    return await JSZip.loadAsync(bytes);
  } catch (err) {
    throw new ParseError(`The ${kind} file could not be read: ${(err as Error).message}`);
  }
}

/** Text of a zip entry, or undefined when the container has no such entry. */
export async function entryText(zip: JSZip, name: string): Promise<string | undefined> {
  const f = zip.file(name);
  return f ? f.async('string') : undefined;
}
