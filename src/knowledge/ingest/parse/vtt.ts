import webvtt from 'webvtt-parser';
import { ParseError } from '../../errors.js';
import { decodeText } from './decode.js';

/** `<v Speaker>` / `<v.loud Speaker>` at the start of a cue. */
const VOICE = /^<v(?:\.[^\s>]*)?\s+([^>]*)>/;

/**
 * WebVTT captions as a transcript, as Dify's document extractor gives it: consecutive cues of the
 * same speaker joined into one line `Speaker "text"` (just the text when no speaker is named).
 */
export function parseVtt(bytes: Buffer): string {
  const parser = new webvtt.WebVTTParser();
  let cues: { text: string }[];
  try {
    cues = parser.parse(decodeText(bytes), 'metadata').cues;
  } catch (err) {
    throw new ParseError(`The VTT file could not be read: ${(err as Error).message}`);
  }
  const lines: { speaker: string; text: string }[] = [];
  for (const cue of cues) {
    const speaker = VOICE.exec(cue.text)?.[1]?.trim() ?? '';
    const text = cue.text.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ').trim();
    if (text === '') continue;
    const last = lines.at(-1);
    if (last && last.speaker === speaker) last.text += ` ${text}`;
    else lines.push({ speaker, text });
  }
  return lines.map((l) => (l.speaker ? `${l.speaker} "${l.text}"` : l.text)).join('\n');
}
