import http from 'node:http';
import { benchServer, fmt } from './lib.js';

/** Bytes a response puts on the wire (its body as sent, before any decompression) with or without gzip. */
function wireBytes(url: string, gzip: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: gzip ? { 'accept-encoding': 'gzip' } : {} }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => resolve(n));
      })
      .on('error', reject);
  });
}

/**
 * The web app pages' transfer sizes: each page's shell, script and stylesheet as a browser fetches
 * them (gzip accepted), beside the same bytes uncompressed (the baseline) and the issue's budget of
 * 150 KB of JavaScript per page, gzipped.
 */
export async function run(): Promise<void> {
  const s = await benchServer();
  const lines: string[] = [];
  for (const page of ['chat', 'chatbot', 'completion', 'workflow']) {
    const shellUrl = `${s.url}/${page}/0123456789abcdef`;
    const html = await (await fetch(shellUrl)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/web-app\/[^"]+)"/g)].map((m) => `${s.url}${m[1]}`);
    const js = assets.find((a) => a.includes('.js'))!;
    let gz = await wireBytes(shellUrl, true);
    let raw = await wireBytes(shellUrl, false);
    for (const a of assets) {
      gz += await wireBytes(a, true);
      raw += await wireBytes(a, false);
    }
    const jsGz = await wireBytes(js, true);
    lines.push(`/${page}/{code}`.padEnd(20) + `transfer ${fmt(gz / 1024, 1)} KB (uncompressed ${fmt(raw / 1024, 1)} KB)  script ${fmt(jsGz / 1024, 1)} KB gz of the 150 KB budget`);
  }
  const embedGz = await wireBytes(`${s.url}/embed.min.js`, true);
  const embedRaw = await wireBytes(`${s.url}/embed.min.js`, false);
  lines.push(`/embed.min.js`.padEnd(20) + `transfer ${fmt(embedGz / 1024, 1)} KB (uncompressed ${fmt(embedRaw / 1024, 1)} KB)`);
  process.stdout.write(lines.join('\n') + '\n');
  await s.close();
}
