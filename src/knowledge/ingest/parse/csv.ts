import Papa from 'papaparse';
import { ParseError } from '../../errors.js';
import { decodeText } from './decode.js';

/** Rows as `header: value;…` lines (Dify's CSV loader shape), so each row is self-describing. */
export function rowsToText(rows: string[][]): string {
  const [header, ...body] = rows;
  if (!header) return '';
  return body
    .filter((r) => r.some((c) => c.trim() !== ''))
    .map((r) => header.map((h, i) => `${h.trim()}: ${(r[i] ?? '').trim()}`).join(';'))
    .join('\n\n');
}

export function parseCsv(bytes: Buffer): string {
  const res = Papa.parse<string[]>(decodeText(bytes), { skipEmptyLines: true });
  const fatal = res.errors.find((e) => e.type === 'Quotes');
  if (fatal) throw new ParseError(`The CSV file could not be read: ${fatal.message} (row ${fatal.row ?? '?'})`);
  return rowsToText(res.data);
}
