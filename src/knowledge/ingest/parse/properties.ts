import { parseLines } from 'dot-properties';
import { decodeText } from './decode.js';

/** Java `.properties`: one `key: value` line per entry (continuations and escapes resolved), comments kept as they are. */
export function parseProperties(bytes: Buffer): string {
  const out: string[] = [];
  for (const line of parseLines(decodeText(bytes))) {
    if (Array.isArray(line)) out.push(`${line[0]}: ${line[1] ?? ''}`);
    else if (line.trim() !== '') out.push(line);
  }
  return out.join('\n');
}
