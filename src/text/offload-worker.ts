/**
 * Worker-thread entry of `TextOffload`: runs `OFFLOAD_OPS` one request at a time and answers each
 * with its result or its error message.
 */
import { parentPort } from 'node:worker_threads';
import { OFFLOAD_OPS, type OffloadReply, type OffloadRequest } from './offload-ops.js';
import { setMaxPieceChars } from './tokenizer.js';

const port = parentPort;
if (!port) throw new Error('offload-worker must run in a worker thread');
port.on('message', (req: OffloadRequest) => {
  let reply: OffloadReply;
  try {
    setMaxPieceChars(req.maxPieceChars);
    const fn = OFFLOAD_OPS[req.op] as (...args: readonly unknown[]) => unknown;
    reply = { id: req.id, result: fn(...req.args) };
  } catch (err) {
    reply = { id: req.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
