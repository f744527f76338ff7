import ExcelJS from 'exceljs';
import { ParseError } from '../../errors.js';
import { rowsToText, TableBudget } from './csv.js';
import { Counter, type ParseLimits } from './limits.js';
import { ZipArchive } from './zip-entries.js';

function cellText(v: ExcelJS.CellValue): string {
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    if ('richText' in v) return v.richText.map((r) => r.text).join('');
    if ('text' in v) return String(v.text);
    if ('result' in v) return String(v.result ?? '');
    return '';
  }
  return String(v);
}

/** Every sheet, rows as `header: value;…` lines like CSV. The container is checked first (`ZipArchive.verify`). */
export async function parseXlsx(bytes: Buffer, limits: ParseLimits): Promise<string> {
  ZipArchive.open(bytes, 'XLSX', limits).verify();
  const wb = new ExcelJS.Workbook();
  try {
    await wb.xlsx.load(bytes as unknown as ArrayBuffer);
  } catch (err) {
    throw new ParseError(`The XLSX file could not be read: ${(err as Error).message}`);
  }
  const sheets = new Counter(limits, 'maxSections', 'The XLSX file has more than N sheets');
  const budget = new TableBudget(limits, 'XLSX');
  const parts: string[] = [];
  wb.eachSheet((sheet) => {
    sheets.add();
    const rows: string[][] = [];
    sheet.eachRow({ includeEmpty: false }, (row) => {
      const values = row.values as ExcelJS.CellValue[];
      rows.push(values.slice(1).map(cellText));
    });
    const text = rowsToText(rows, budget);
    if (text) parts.push(text);
  });
  return parts.join('\n\n');
}
