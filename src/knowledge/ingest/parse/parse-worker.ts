/**
 * Worker-thread entry of `DocumentParser`: parses one document at a time (`parseDocument`) and
 * answers with its text or its error. It says `ready` once loaded, so that the parser's clock
 * starts with the parse and not with the thread's start-up.
 */
import { parentPort } from 'node:worker_threads';
import { ParseError } from '../../errors.js';
import { parseDocument } from './index.js';
import { ParseLimitExceeded } from './limits.js';
import type { ParseReply, ParseRequest } from './parse-messages.js';

const port = parentPort;
if (!port) throw new Error('parse-worker must run in a worker thread');
port.on('message', (req: ParseRequest) => {
  const bytes = Buffer.from(req.bytes.buffer, req.bytes.byteOffset, req.bytes.byteLength);
  parseDocument(bytes, req.extension, req.limits, { allowEmpty: req.allowEmpty }).then(
    (text) => port.postMessage({ id: req.id, text } satisfies ParseReply),
    (err: unknown) => {
      const kind = err instanceof ParseLimitExceeded ? 'limit' : err instanceof ParseError ? 'parse' : 'other';
      port.postMessage({ id: req.id, error: err instanceof Error ? err.message : String(err), kind } satisfies ParseReply);
    },
  );
});
port.postMessage({ ready: true } satisfies ParseReply);
