import Papa from 'papaparse';
import { ParseError } from '../../errors.js';
import { decodeText } from './decode.js';
import { Counter, TextBudget, type ParseLimits } from './limits.js';

/** The caps of a table's text (`PARSE_MAX_ROWS`, `PARSE_MAX_CELLS`, `PARSE_MAX_TEXT_CHARS`), shared by the sheets of one file. */
export class TableBudget {
  readonly rows: Counter;
  readonly cells: Counter;
  readonly text: TextBudget;

  constructor(limits: ParseLimits, kind: string) {
    this.rows = new Counter(limits, 'maxRows', `The ${kind} file has more than N rows`);
    this.cells = new Counter(limits, 'maxCells', `The ${kind} file has more than N cells`);
    this.text = new TextBudget(limits, kind);
  }
}

/**
 * Rows as `header: value;…` lines (Dify's CSV loader shape), so each row is self-describing. Each
 * line is counted before the next is built: a long header repeated on every row is how a small
 * table becomes a huge text.
 */
export function rowsToText(rows: string[][], budget: TableBudget): string {
  const [header, ...body] = rows;
  if (!header) return '';
  budget.rows.add(rows.length);
  const lines: string[] = [];
  for (const r of body) {
    budget.cells.add(Math.max(r.length, header.length));
    if (!r.some((c) => c.trim() !== '')) continue;
    const parts: string[] = [];
    for (let i = 0; i < header.length; i++) parts.push(budget.text.take(`${header[i]!.trim()}: ${(r[i] ?? '').trim()}`));
    lines.push(parts.join(';'));
  }
  return lines.join('\n\n');
}

export function parseCsv(bytes: Buffer, limits: ParseLimits): string {
  const res = Papa.parse<string[]>(decodeText(bytes), { skipEmptyLines: true });
  const fatal = res.errors.find((e) => e.type === 'Quotes');
  if (fatal) throw new ParseError(`The CSV file could not be read: ${fatal.message} (row ${fatal.row ?? '?'})`);
  return rowsToText(res.data, new TableBudget(limits, 'CSV'));
}
