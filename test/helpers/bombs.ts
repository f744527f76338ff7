import { crc32, deflateRawSync } from 'node:zlib';

/** A file of a zip archive: its bytes, or bytes already deflated with a size the header declares. */
export type ZipFile =
  | { readonly name: string; readonly data: Buffer | string }
  | { readonly name: string; readonly deflated: Buffer; readonly declaredSize: number; readonly crc: number };

/**
 * Writes a zip archive (deflated entries; no ZIP64). A `deflated` entry is written as given, with
 * the uncompressed size it declares, true or not (a zip bomb that lies about its size).
 */
export function writeZip(files: readonly ZipFile[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const name = Buffer.from(f.name, 'utf8');
    let body: Buffer;
    let size: number;
    let crc: number;
    if ('deflated' in f) {
      body = f.deflated;
      size = f.declaredSize;
      crc = f.crc;
    } else {
      const data = typeof f.data === 'string' ? Buffer.from(f.data, 'utf8') : f.data;
      body = deflateRawSync(data);
      size = data.length;
      crc = crc32(data);
    }
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const head = Buffer.alloc(46);
    head.writeUInt32LE(0x02014b50, 0);
    head.writeUInt16LE(20, 4);
    head.writeUInt16LE(20, 6);
    head.writeUInt16LE(0x0800, 8);
    head.writeUInt16LE(8, 10);
    head.writeUInt32LE(crc >>> 0, 16);
    head.writeUInt32LE(body.length, 20);
    head.writeUInt32LE(size, 24);
    head.writeUInt16LE(name.length, 28);
    head.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    central.push(head, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const CT = (overrides: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>${overrides}</Types>`;
const rels = (items: [string, string, string][]) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${items.map(([id, type, target]) => `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/${type}" Target="${target}"/>`).join('')}</Relationships>`;

/** A DOCX whose `word/document.xml` is `body` (a zip entry as given: plain, or deflated with any declared size). */
export function docxWith(document: ZipFile): Buffer {
  return writeZip([
    { name: '[Content_Types].xml', data: CT('<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>') },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'word/document.xml']]) },
    document,
  ]);
}

const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

/** A DOCX whose body is `paragraphs` empty paragraphs (`<w:p/>`: 6 bytes each, deflated to almost nothing). */
export function docxOfParagraphs(paragraphs: number): Buffer {
  const xml = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ${W}><w:body>${'<w:p/>'.repeat(paragraphs)}</w:body></w:document>`;
  return docxWith({ name: 'word/document.xml', data: xml });
}

/**
 * A DOCX zip bomb: `word/document.xml` inflates to `bytes` bytes of spaces inside a paragraph;
 * `declaredSize` is what its headers say (the truth unless given).
 */
export function docxBomb(bytes: number, declaredSize?: number): Buffer {
  const xml = Buffer.alloc(bytes, 0x20);
  const head = `<?xml version="1.0"?><w:document ${W}><w:body><w:p><w:r><w:t>`;
  xml.write(head, 0);
  return docxWith({ name: 'word/document.xml', deflated: deflateRawSync(xml), declaredSize: declaredSize ?? bytes, crc: crc32(xml) });
}

/** An XLSX of one sheet: `rows` × `cols` cells that all use shared string 0, which is `sharedChars` characters long. */
export function xlsxSharedStringBomb(sharedChars: number, rows: number, cols: number): Buffer {
  const colName = (i: number) => (i < 26 ? String.fromCharCode(65 + i) : String.fromCharCode(64 + Math.floor(i / 26)) + String.fromCharCode(65 + (i % 26)));
  const sheetRows: string[] = [];
  for (let r = 1; r <= rows; r++) {
    const cells: string[] = [];
    for (let c = 0; c < cols; c++) cells.push(`<c r="${colName(c)}${r}" t="s"><v>0</v></c>`);
    sheetRows.push(`<row r="${r}">${cells.join('')}</row>`);
  }
  const ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
  return writeZip([
    {
      name: '[Content_Types].xml',
      data: CT(
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>',
      ),
    },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'xl/workbook.xml']]) },
    { name: 'xl/workbook.xml', data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook ${ns}><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>` },
    { name: 'xl/_rels/workbook.xml.rels', data: rels([['rId1', 'worksheet', 'worksheets/sheet1.xml'], ['rId2', 'sharedStrings', 'sharedStrings.xml']]) },
    { name: 'xl/sharedStrings.xml', data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst ${ns} count="1" uniqueCount="1"><si><t>${'x'.repeat(sharedChars)}</t></si></sst>` },
    { name: 'xl/worksheets/sheet1.xml', data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet ${ns}><sheetData>${sheetRows.join('')}</sheetData></worksheet>` },
  ]);
}

/**
 * A PDF whose page tree names one node twice at every level, `levels` deep: 2^levels pages from
 * `levels + 2` objects (a few hundred bytes).
 */
export function pdfPageTreeBomb(levels: number): Buffer {
  const objects: string[] = [];
  objects.push('<< /Type /Catalog /Pages 2 0 R >>');
  for (let l = 0; l < levels; l++) {
    const self = 2 + l;
    const parent = l === 0 ? '' : ` /Parent ${self - 1} 0 R`;
    objects.push(`<< /Type /Pages /Kids [${self + 1} 0 R ${self + 1} 0 R] /Count ${2 ** (levels - l)}${parent} >>`);
  }
  objects.push(`<< /Type /Page /Parent ${1 + levels} 0 R /MediaBox [0 0 612 792] >>`);
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** HTML of `depth` nested `<div>`s (never closed, 5 bytes each) around one word. */
export function nestedDivs(depth: number): Buffer {
  return Buffer.from(`<html><body>${'<div>'.repeat(depth)}deep</body></html>`);
}

/** An EPUB whose spine names one chapter (of `chapterChars` characters of text) `times` times. */
export function epubRepeatingChapter(chapterChars: number, times: number): Buffer {
  const words = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(chapterChars / 27)).slice(0, chapterChars);
  return writeZip([
    { name: 'mimetype', data: 'application/epub+zip' },
    { name: 'META-INF/container.xml', data: '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>' },
    { name: 'OEBPS/content.opf', data: `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest><item id="c" href="ch.xhtml" media-type="application/xhtml+xml"/></manifest><spine>${'<itemref idref="c"/>'.repeat(times)}</spine></package>` },
    { name: 'OEBPS/ch.xhtml', data: `<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><p>${words}</p></body></html>` },
  ]);
}

/** A PPTX of one slide whose XML is `bytes` long (one paragraph after another). */
export function pptxHugeSlide(bytes: number): Buffer {
  const p = '<a:p><a:r><a:t>slide text</a:t></a:r></a:p>';
  const head = '<?xml version="1.0" encoding="UTF-8"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>';
  const tail = '</p:txBody></p:sp></p:spTree></p:cSld></p:sld>';
  const n = Math.max(1, Math.floor((bytes - head.length - tail.length) / p.length));
  const xml = head + p.repeat(n) + tail;
  return writeZip([
    { name: '[Content_Types].xml', data: CT('') },
    { name: 'ppt/slides/slide1.xml', data: xml },
  ]);
}
