import { ParseError } from '../../errors.js';
import { overLimit, type ParseLimits } from './limits.js';

type Parser = (bytes: Buffer, limits: ParseLimits) => string | Promise<string>;

/**
 * A parser whose module (and library: mammoth, exceljs, cheerio, unpdf, papaparse, chardet and
 * iconv-lite for text, …) is imported on the first file of its type, so a process that parses none
 * (a CLI command, a server before its first upload) does not load them.
 */
const lazy =
  (load: () => Promise<Parser>): Parser =>
  async (bytes, limits) =>
    (await load())(bytes, limits);

const parseHtml = lazy(async () => (await import('./html.js')).parseHtml);
const parseText = lazy(async () => (await import('./text.js')).parseText);

const PARSERS: Record<string, Parser> = {
  txt: parseText,
  text: parseText,
  md: parseText,
  markdown: parseText,
  mdx: parseText,
  html: parseHtml,
  htm: parseHtml,
  pdf: lazy(async () => (await import('./pdf.js')).parsePdf),
  docx: lazy(async () => (await import('./docx.js')).parseDocx),
  csv: lazy(async () => (await import('./csv.js')).parseCsv),
  xlsx: lazy(async () => (await import('./xlsx.js')).parseXlsx),
  json: lazy(async () => (await import('./json.js')).parseJson),
  eml: lazy(async () => (await import('./eml.js')).parseEml),
  msg: lazy(async () => (await import('./msg.js')).parseMsg),
  pptx: lazy(async () => (await import('./pptx.js')).parsePptx),
  epub: lazy(async () => (await import('./epub.js')).parseEpub),
  vtt: lazy(async () => (await import('./vtt.js')).parseVtt),
  properties: lazy(async () => (await import('./properties.js')).parseProperties),
};

/** Extensions a knowledge document may have. */
export const SUPPORTED_EXTENSIONS: readonly string[] = Object.keys(PARSERS);

/**
 * Extracts the text of a stored file, on the calling thread; throws ParseError saying why it
 * cannot (a `ParseLimitExceeded` when it needs more than `limits` allow). A file without text is
 * an error unless `allowEmpty` (the document-extractor node gives `""` for it, as Dify). The
 * server parses through `DocumentParser`, which runs this on a worker thread with a heap and a
 * time limit.
 */
export async function parseDocument(bytes: Buffer, extension: string, limits: ParseLimits, opts: { readonly allowEmpty?: boolean } = {}): Promise<string> {
  const parser = PARSERS[extension.toLowerCase()];
  if (!parser) throw new ParseError(`Files of type .${extension} cannot be parsed.`);
  let text: string;
  try {
    text = await parser(bytes, limits);
  } catch (err) {
    if (err instanceof ParseError) throw err;
    throw new ParseError(`The .${extension} file could not be parsed: ${(err as Error).message}`);
  }
  if (text.length > limits.maxTextChars) throw overLimit(limits, 'maxTextChars', `The .${extension} file has more text than the limit of ${limits.maxTextChars} characters`);
  if (text.trim() === '' && !opts.allowEmpty) throw new ParseError(`The .${extension} file contains no text.`);
  return text;
}
