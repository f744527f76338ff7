import { ParseError } from '../errors.js';
import { parseCsv } from './csv.js';
import { parseDocx } from './docx.js';
import { parseHtml } from './html.js';
import { parseJson } from './json.js';
import { parsePdf } from './pdf.js';
import { parseText } from './text.js';
import { parseXlsx } from './xlsx.js';
import { parseEml } from './eml.js';
import { parseMsg } from './msg.js';
import { parsePptx } from './pptx.js';
import { parseEpub } from './epub.js';
import { parseVtt } from './vtt.js';
import { parseProperties } from './properties.js';

type Parser = (bytes: Buffer) => string | Promise<string>;

const PARSERS: Record<string, Parser> = {
  txt: parseText,
  text: parseText,
  md: parseText,
  markdown: parseText,
  mdx: parseText,
  html: parseHtml,
  htm: parseHtml,
  pdf: parsePdf,
  docx: parseDocx,
  csv: parseCsv,
  xlsx: parseXlsx,
  json: parseJson,
  eml: parseEml,
  msg: parseMsg,
  pptx: parsePptx,
  epub: parseEpub,
  vtt: parseVtt,
  properties: parseProperties,
};

/** Extensions a knowledge document may have. */
export const SUPPORTED_EXTENSIONS: readonly string[] = Object.keys(PARSERS);

/**
 * Extracts the text of a stored file; throws ParseError saying why it cannot. A file without text
 * is an error unless `allowEmpty` (the document-extractor node gives `""` for it, as Dify).
 */
export async function parseDocument(bytes: Buffer, extension: string, opts: { readonly allowEmpty?: boolean } = {}): Promise<string> {
  const parser = PARSERS[extension.toLowerCase()];
  if (!parser) throw new ParseError(`Files of type .${extension} cannot be parsed.`);
  let text: string;
  try {
    text = await parser(bytes);
  } catch (err) {
    if (err instanceof ParseError) throw err;
    throw new ParseError(`The .${extension} file could not be parsed: ${(err as Error).message}`);
  }
  if (text.trim() === '' && !opts.allowEmpty) throw new ParseError(`The .${extension} file contains no text.`);
  return text;
}
