/**
 * The values Dify's embed script puts in the chatbot's URL (`difyChatbotConfig.inputs`,
 * `systemVariables` as `sys.NAME`, `userVariables` as `user.NAME`): each value gzip-compressed and
 * base64-encoded, as Dify's `web/public/embed.js` writes them and its web app reads them back.
 */
export interface UrlValues {
  inputs: Record<string, string>;
  system: Record<string, string>;
  user: Record<string, string>;
}

export async function gunzipBase64(value: string): Promise<string> {
  const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

export async function gzipBase64(value: string): Promise<string> {
  const stream = new Blob([new TextEncoder().encode(value)]).stream().pipeThrough(new CompressionStream('gzip'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** Reads the URL's values; one that does not decode is taken as plain text (a hand-written link). */
export async function readUrlValues(search: string): Promise<UrlValues> {
  const out: UrlValues = { inputs: {}, system: {}, user: {} };
  const params = new URLSearchParams(search);
  await Promise.all(
    [...params.entries()].map(async ([key, raw]) => {
      let value: string;
      try {
        value = await gunzipBase64(raw);
      } catch {
        value = raw;
      }
      if (key.startsWith('sys.')) out.system[key.slice(4)] = value;
      else if (key.startsWith('user.')) out.user[key.slice(5)] = value;
      else out.inputs[key] = value;
    }),
  );
  return out;
}
