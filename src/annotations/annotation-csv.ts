/*
 * Annotations as CSV, in the format of Dify's console: a header row (Dify's template has
 * `question,answer`; the import skips the first row whatever it says, as Dify's `pd.read_csv`),
 * then one annotation a row, question in the first column and answer in the second (further
 * columns are ignored). RFC 4180 quoting; UTF-8, a byte-order mark allowed (and written, so
 * spreadsheets read the export as UTF-8).
 */

/** One row that cannot be imported: its number in the file (the header is row 1) and why. */
export class CsvRowError extends Error {
  constructor(
    readonly row: number,
    reason: string,
  ) {
    super(`row ${row}: ${reason}`);
  }
}

/** What a parsed data row holds, with its number in the file. */
export interface CsvPair {
  readonly row: number;
  readonly question: string;
  readonly answer: string;
}

/** Cells a spreadsheet would take for a formula; the export prefixes them with `'`. */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * Parses RFC 4180 CSV in one linear pass. Rows with every cell empty are skipped; `maxRows`
 * bounds the data rows (the header not counted) and the error names the setting given in
 * `limitName`. A cell the export escaped (`'` before a formula character) reads back as written.
 */
export function parseAnnotationCsv(text: string, maxRows: number, limitName: string): CsvPair[] {
  const records = parseCsv(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  const out: CsvPair[] = [];
  for (let i = 1; i < records.length; i++) {
    const { row, cells } = records[i]!;
    if (cells.every((c) => c.trim() === '')) continue;
    const question = unescapeCell(cells[0] ?? '');
    const answer = unescapeCell(cells[1] ?? '');
    if (question.trim() === '') throw new CsvRowError(row, 'the question (first column) is empty');
    if (answer.trim() === '') throw new CsvRowError(row, 'the answer (second column) is empty');
    if (out.length >= maxRows) throw new CsvRowError(row, `a file may hold at most ${maxRows} annotations (${limitName})`);
    out.push({ row, question, answer });
  }
  return out;
}

/** The CSV of these pairs, header `question,answer`, CRLF line ends, with a byte-order mark. */
export function formatAnnotationCsv(pairs: Iterable<{ question: string; answer: string }>): string {
  const lines = ['question,answer'];
  for (const p of pairs) lines.push(`${csvCell(escapeCell(p.question))},${csvCell(escapeCell(p.answer))}`);
  return `\ufeff${lines.join('\r\n')}\r\n`;
}

function escapeCell(v: string): string {
  return FORMULA_START.test(v) ? `'${v}` : v;
}

function unescapeCell(v: string): string {
  return v.startsWith("'") && FORMULA_START.test(v.slice(1)) ? v.slice(1) : v;
}

function csvCell(v: string): string {
  return /[",\r\n]/.test(v) || v !== v.trim() ? `"${v.replaceAll('"', '""')}"` : v;
}

/** RFC 4180 records with the file row each starts on (1-based); a quote left open is a row error. */
function parseCsv(text: string): { row: number; cells: string[] }[] {
  const records: { row: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = '';
  let line = 1;
  let recordLine = 1;
  let i = 0;
  const n = text.length;
  const endRecord = () => {
    cells.push(cell);
    records.push({ row: records.length + 1, cells });
    cells = [];
    cell = '';
  };
  while (i < n) {
    const c = text[i]!;
    if (c === '"' && cell === '') {
      // a quoted cell: up to the closing quote ("" is a quote)
      const start = recordLine;
      let j = i + 1;
      let buf = '';
      for (;;) {
        const q = text.indexOf('"', j);
        if (q === -1) throw new CsvRowError(records.length + 1, `a quoted cell opened on line ${start} is never closed`);
        buf += text.slice(j, q);
        for (let k = j; k < q; k++) if (text.charCodeAt(k) === 10) line++;
        if (text[q + 1] === '"') {
          buf += '"';
          j = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      cell = buf;
      // text after the closing quote up to the separator belongs to the cell (as lenient readers do)
      while (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') cell += text[i++];
      continue;
    }
    if (c === ',') {
      cells.push(cell);
      cell = '';
      i++;
    } else if (c === '\r' || c === '\n') {
      endRecord();
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line++;
      recordLine = line;
    } else {
      // plain text up to the next special character
      let j = i;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 44 || d === 10 || d === 13) break;
        j++;
      }
      cell += text.slice(i, j);
      i = j;
    }
  }
  if (cell !== '' || cells.length > 0) endRecord();
  return records;
}
