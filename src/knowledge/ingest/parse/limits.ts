import { ParseError } from '../../errors.js';

/**
 * What one parse of a document may cost, each a setting (src/config.ts, README "Document parsing"):
 * a file that needs more fails with a `ParseLimitExceeded` naming the setting and its value.
 */
export interface ParseLimits {
  /** `PARSE_MAX_UNCOMPRESSED_BYTES`: bytes a zip container (docx, xlsx, pptx, epub) may inflate to, all entries read together (default 100 MiB). */
  readonly maxUncompressedBytes: number;
  /** `PARSE_MAX_TEXT_CHARS`: characters of extracted text (default 20,000,000). */
  readonly maxTextChars: number;
  /** `PARSE_MAX_PAGES`: pages of a PDF (default 10,000). */
  readonly maxPages: number;
  /** `PARSE_MAX_ROWS`: rows of a CSV or of all sheets of an XLSX (default 500,000). */
  readonly maxRows: number;
  /** `PARSE_MAX_CELLS`: cells of a CSV or of all sheets of an XLSX (default 5,000,000). */
  readonly maxCells: number;
  /** `PARSE_MAX_SECTIONS`: slides of a PPTX, spine items of an EPUB, sheets of an XLSX (default 10,000). */
  readonly maxSections: number;
  /** `PARSE_MAX_HTML_DEPTH`: element nesting of an HTML document (default 1,000). */
  readonly maxHtmlDepth: number;
}

/**
 * Document parsing limits (`PARSE_MAX_*`, see `ParseLimits`): the parsers fall back to them when a
 * caller (the web scraper tool, a test) gives none.
 */
export const DEFAULT_PARSE_LIMITS = Object.freeze({
  maxUncompressedBytes: 100 * 1024 * 1024,
  maxTextChars: 20_000_000,
  maxPages: 10_000,
  maxRows: 500_000,
  maxCells: 5_000_000,
  maxSections: 10_000,
  maxHtmlDepth: 1000,
} satisfies ParseLimits);

/** Each limit's setting, for its error. */
export const PARSE_LIMIT_SETTINGS: Readonly<Record<keyof ParseLimits, string>> = Object.freeze({
  maxUncompressedBytes: 'PARSE_MAX_UNCOMPRESSED_BYTES',
  maxTextChars: 'PARSE_MAX_TEXT_CHARS',
  maxPages: 'PARSE_MAX_PAGES',
  maxRows: 'PARSE_MAX_ROWS',
  maxCells: 'PARSE_MAX_CELLS',
  maxSections: 'PARSE_MAX_SECTIONS',
  maxHtmlDepth: 'PARSE_MAX_HTML_DEPTH',
});

/** A document that needs more than a limit allows; the message names the setting and its value. */
export class ParseLimitExceeded extends ParseError {
  override name = 'ParseLimitExceeded';
}

/** `what` (e.g. "The XLSX file has more than") + the limit's setting and value. */
export function overLimit(limits: ParseLimits, key: keyof ParseLimits, what: string): ParseLimitExceeded {
  return new ParseLimitExceeded(`${what} (${PARSE_LIMIT_SETTINGS[key]}=${limits[key]}).`);
}

/**
 * Counts the characters of text a parser emits, failing as soon as the document has more than
 * `PARSE_MAX_TEXT_CHARS`, before the text is built (a shared string used by thousands of cells,
 * a chapter repeated in the spine).
 */
export class TextBudget {
  readonly #limits: ParseLimits;
  readonly #kind: string;
  #used = 0;

  constructor(limits: ParseLimits, kind: string) {
    this.#limits = limits;
    this.#kind = kind;
  }

  /** Counts `text`, and returns it. */
  take(text: string): string {
    this.#used += text.length;
    if (this.#used > this.#limits.maxTextChars) throw overLimit(this.#limits, 'maxTextChars', `The ${this.#kind} file has more text than the limit of ${this.#limits.maxTextChars} characters`);
    return text;
  }
}

/** A counter of rows, cells or sections against its limit. */
export class Counter {
  readonly #limits: ParseLimits;
  readonly #key: 'maxRows' | 'maxCells' | 'maxSections' | 'maxPages';
  readonly #what: string;
  #n = 0;

  /** `what` names the counted things in the error ("The XLSX file has more than N rows"). */
  constructor(limits: ParseLimits, key: 'maxRows' | 'maxCells' | 'maxSections' | 'maxPages', what: string) {
    this.#limits = limits;
    this.#key = key;
    this.#what = what;
  }

  add(n = 1): void {
    this.#n += n;
    if (this.#n > this.#limits[this.#key]) throw overLimit(this.#limits, this.#key, `${this.#what.replace('N', String(this.#limits[this.#key]))}`);
  }
}
