// Module loader hooks for record-modules.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';

let out;

export function initialize(data) {
  out = data.out;
}

export async function load(url, context, next) {
  if (out) appendFileSync(out, `${url}\n`);
  return next(url, context);
}
