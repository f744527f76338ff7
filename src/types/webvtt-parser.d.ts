/** The subset of webvtt-parser (no types of its own) that src/knowledge/ingest/parse/vtt.ts calls. */
declare module 'webvtt-parser' {
  export class WebVTTParser {
    parse(input: string, mode?: 'metadata' | 'chapters'): { cues: { text: string; startTime: number; endTime: number }[]; errors: { message: string; line: number }[] };
  }
  const webvtt: { WebVTTParser: typeof WebVTTParser };
  export default webvtt;
}
