/** Prints one JSON document (with `--json`) or the human text, to stdout. */
export function print(json: boolean | undefined, obj: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(obj)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}
