import { inflateRawSync } from 'node:zlib';
import { ParseError } from '../../errors.js';
import { overLimit, type ParseLimits } from './limits.js';

/** One file of a zip archive, as its central directory describes it. */
interface ZipEntry {
  readonly name: string;
  readonly method: number;
  readonly flags: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localOffset: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX32 = 0xffffffff;

/**
 * An OOXML / EPUB container read through its central directory, never trusting it: every entry's
 * declared uncompressed size, and their sum, must be within `PARSE_MAX_UNCOMPRESSED_BYTES`; an
 * entry is inflated with a cap at its declared size (zlib's `maxOutputLength` stops inflating
 * there, so a lying header costs no more than an honest one), and every read counts against the
 * same byte budget (a spine that names one chapter a thousand times reads it a thousand times).
 */
export class ZipArchive {
  readonly #bytes: Buffer;
  readonly #kind: string;
  readonly #limits: ParseLimits;
  readonly #entries: Map<string, ZipEntry>;
  readonly #all: readonly ZipEntry[];
  #inflated = 0;

  private constructor(bytes: Buffer, kind: string, limits: ParseLimits, entries: readonly ZipEntry[]) {
    this.#bytes = bytes;
    this.#kind = kind;
    this.#limits = limits;
    this.#all = entries;
    this.#entries = new Map(entries.map((e) => [e.name, e]));
  }

  /** Reads the central directory of `bytes`; `kind` (DOCX, EPUB, …) names the format in errors. */
  static open(bytes: Buffer, kind: string, limits: ParseLimits): ZipArchive {
    const entries = readDirectory(bytes, kind);
    let total = 0;
    for (const e of entries) {
      if (e.size > limits.maxUncompressedBytes) throw overLimit(limits, 'maxUncompressedBytes', `The ${kind} file's entry ${e.name} would inflate to ${e.size} bytes, more than the limit`);
      total += e.size;
    }
    if (total > limits.maxUncompressedBytes) throw overLimit(limits, 'maxUncompressedBytes', `The ${kind} file would inflate to ${total} bytes, more than the limit`);
    return new ZipArchive(bytes, kind, limits, entries);
  }

  /** Names of the archive's entries. */
  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** The inflated bytes of an entry, or undefined when there is none of that name. */
  read(name: string): Buffer | undefined {
    const e = this.#entries.get(name);
    return e ? this.#inflate(e) : undefined;
  }

  /** An entry as UTF-8 text, or undefined when there is none of that name. */
  text(name: string): string | undefined {
    return this.read(name)?.toString('utf8');
  }

  /**
   * Inflates every entry once (counted, then dropped), for an archive handed to a library that
   * inflates it again on its own (mammoth, exceljs): afterwards every entry is known to hold
   * exactly what it declares, so the library's inflating is bounded as well.
   */
  verify(): void {
    for (const e of this.#all) this.#inflate(e);
  }

  #inflate(e: ZipEntry): Buffer {
    const kind = this.#kind;
    const left = this.#limits.maxUncompressedBytes - this.#inflated;
    if (e.size > left) throw overLimit(this.#limits, 'maxUncompressedBytes', `Reading the ${kind} file inflates more than the limit of ${this.#limits.maxUncompressedBytes} bytes (at entry ${e.name})`);
    if (e.flags & 1) throw new ParseError(`The ${kind} file could not be read: its entry ${e.name} is encrypted`);
    const h = e.localOffset;
    if (h + 30 > this.#bytes.length || this.#bytes.readUInt32LE(h) !== LOCAL) throw new ParseError(`The ${kind} file could not be read: the local header of ${e.name} is missing`);
    const start = h + 30 + this.#bytes.readUInt16LE(h + 26) + this.#bytes.readUInt16LE(h + 28);
    if (start + e.compressedSize > this.#bytes.length) throw new ParseError(`The ${kind} file could not be read: ${e.name} is truncated`);
    const data = this.#bytes.subarray(start, start + e.compressedSize);
    let out: Buffer;
    if (e.method === 0) {
      out = data;
    } else if (e.method === 8) {
      try {
        // Stops inflating one byte past the declared size: enough to know the header lied.
        out = inflateRawSync(data, { maxOutputLength: e.size + 1 });
      } catch (err) {
        if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw this.#lied(e);
        throw new ParseError(`The ${kind} file could not be read: ${e.name}: ${(err as Error).message}`);
      }
    } else {
      throw new ParseError(`The ${kind} file could not be read: ${e.name} uses compression method ${e.method} (only stored and deflated entries are read)`);
    }
    if (out.length > e.size) throw this.#lied(e);
    if (out.length < e.size) throw new ParseError(`The ${kind} file could not be read: ${e.name} holds fewer bytes than it declares`);
    this.#inflated += out.length;
    return out;
  }

  #lied(e: ZipEntry): ParseError {
    return overLimit(this.#limits, 'maxUncompressedBytes', `The ${this.#kind} file's entry ${e.name} inflates to more than the ${e.size} bytes it declares; inflating stopped there`);
  }
}

/** The entries of the central directory (a prefix before the archive, as a self-extractor has, is allowed). */
function readDirectory(b: Buffer, kind: string): ZipEntry[] {
  const bad = (why: string) => new ParseError(`The ${kind} file could not be read: ${why}`);
  let eocd = -1;
  for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 0xffff); i--) {
    if (b.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw bad('it is not a zip archive (no end of central directory)');
  const count = b.readUInt16LE(eocd + 10);
  const cdSize = b.readUInt32LE(eocd + 12);
  const cdOffset = b.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === MAX32 || cdOffset === MAX32) throw bad('ZIP64 archives are not supported');
  const shift = eocd - (cdOffset + cdSize);
  if (shift < 0) throw bad('its central directory lies outside the file');
  const entries: ZipEntry[] = [];
  let p = cdOffset + shift;
  for (let n = 0; n < count; n++) {
    if (p + 46 > eocd || b.readUInt32LE(p) !== CENTRAL) throw bad('its central directory is corrupt');
    const nameLen = b.readUInt16LE(p + 28);
    const extraLen = b.readUInt16LE(p + 30);
    const commentLen = b.readUInt16LE(p + 32);
    let compressedSize = b.readUInt32LE(p + 20);
    let size = b.readUInt32LE(p + 24);
    let localOffset = b.readUInt32LE(p + 42);
    const name = b.toString('utf8', p + 46, p + 46 + nameLen);
    // ZIP64 extended information: the 64-bit values of the fields that say 0xFFFFFFFF, in order
    let x = p + 46 + nameLen;
    const extraEnd = x + extraLen;
    while (x + 4 <= extraEnd) {
      const id = b.readUInt16LE(x);
      const len = b.readUInt16LE(x + 2);
      if (id === 0x0001) {
        let q = x + 4;
        const next = () => {
          if (q + 8 > x + 4 + len) throw bad(`the ZIP64 field of ${name} is too short`);
          const v = Number(b.readBigUInt64LE(q));
          q += 8;
          return v;
        };
        if (size === MAX32) size = next();
        if (compressedSize === MAX32) compressedSize = next();
        if (localOffset === MAX32) localOffset = next();
      }
      x += 4 + len;
    }
    entries.push({ name, method: b.readUInt16LE(p + 10), flags: b.readUInt16LE(p + 8), compressedSize, size, localOffset: localOffset + shift });
    p = extraEnd + commentLen;
  }
  return entries;
}
