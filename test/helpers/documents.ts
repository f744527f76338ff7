import CFB from 'cfb';
import JSZip from 'jszip';
import { fixtures } from './knowledge.js';

/** A minimal Outlook `.msg` (a compound file with the subject, sender and body property streams). */
export function makeMsg(subject: string, sender: string, body: string): Buffer {
  const u16 = (s: string) => Buffer.from(`${s}\0`, 'utf16le');
  const cfb = CFB.utils.cfb_new();
  CFB.utils.cfb_add(cfb, '/__substg1.0_0037001F', u16(subject));
  CFB.utils.cfb_add(cfb, '/__substg1.0_1000001F', u16(body));
  CFB.utils.cfb_add(cfb, '/__substg1.0_0C1A001F', u16(sender));
  CFB.utils.cfb_add(cfb, '/__properties_version1.0', Buffer.alloc(32));
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array);
}

/** A minimal PowerPoint file: one slide per entry, one paragraph per line (slide 10 sorts after slide 2). */
export async function makePptx(slides: string[][]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  slides.forEach((lines, i) => {
    const ps = lines.map((l) => `<a:p><a:r><a:t>${l}</a:t></a:r></a:p>`).join('');
    zip.file(
      `ppt/slides/slide${i + 1}.xml`,
      `<?xml version="1.0" encoding="UTF-8"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>${ps}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`,
    );
  });
  return zip.generateAsync({ type: 'nodebuffer' });
}

/** A minimal EPUB: chapters in spine order (the manifest lists them reversed, so order comes from the spine). */
export async function makeEpub(chapters: string[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('mimetype', 'application/epub+zip');
  zip.file('META-INF/container.xml', '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>');
  const items = chapters.map((_, i) => `<item id="c${i}" href="text/ch${i}.xhtml" media-type="application/xhtml+xml"/>`).reverse().join('');
  const spine = chapters.map((_, i) => `<itemref idref="c${i}"/>`).join('');
  zip.file('OEBPS/content.opf', `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><manifest>${items}</manifest><spine>${spine}</spine></package>`);
  chapters.forEach((c, i) => zip.file(`OEBPS/text/ch${i}.xhtml`, `<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><p>${c}</p></body></html>`));
  return zip.generateAsync({ type: 'nodebuffer' });
}

export interface DocFixture {
  readonly name: string;
  readonly bytes: Buffer;
  readonly mime: string;
  /** A word only this file contains. */
  readonly word: string;
  /** The whole extracted text, where the test pins it exactly. */
  readonly text?: string;
}

/** The knowledge fixtures (txt, md, html, pdf, docx, csv, xlsx, json) plus eml, msg, pptx, epub, vtt and properties. */
export async function documentFixtures(): Promise<DocFixture[]> {
  const eml = [
    'From: Ann Lee <ann@example.com>',
    'To: bob@example.com',
    'Subject: Tapir sighting',
    'Date: Tue, 01 Apr 2025 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'A tapir was seen near the river.',
    '',
  ].join('\r\n');
  const vtt = ['WEBVTT', '', '00:00.000 --> 00:02.000', '<v Ann>Hello there,', '', '00:02.000 --> 00:04.000', '<v Ann>the ibex is here.', '', '00:04.000 --> 00:06.000', '<v Bob>Great!', ''].join('\n');
  return [
    ...(await fixtures()),
    { name: 'mail.eml', mime: 'message/rfc822', word: 'tapir', bytes: Buffer.from(eml) },
    { name: 'note.msg', mime: 'application/vnd.ms-outlook', word: 'meerkat', bytes: makeMsg('Quarterly report', 'Ann Lee', 'The meerkat census is done.'), text: 'From: Ann Lee\nSubject: Quarterly report\n\nThe meerkat census is done.' },
    { name: 'deck.pptx', mime: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', word: 'gecko', bytes: await makePptx([['Title slide'], ['The gecko climbs walls.', 'Second line']]), text: 'Title slide\n\nThe gecko climbs walls.\nSecond line' },
    { name: 'book.epub', mime: 'application/epub+zip', word: 'lemur', bytes: await makeEpub(['Chapter one: the lemur.', 'Chapter two.']), text: 'Chapter one: the lemur.\n\nChapter two.' },
    { name: 'talk.vtt', mime: 'text/vtt', word: 'ibex', bytes: Buffer.from(vtt), text: 'Ann "Hello there, the ibex is here."\nBob "Great!"' },
    { name: 'app.properties', mime: 'text/plain', word: 'jaguar', bytes: Buffer.from('# settings\nanimal = jaguar\nlong.value = first \\\n    second\n'), text: '# settings\nanimal: jaguar\nlong.value: first second' },
  ];
}
