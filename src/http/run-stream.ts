import type { FastifyReply } from 'fastify';
import type { Runtime } from '../runtime.js';
import { isTerminal } from '../runs/run-events.js';
import { openSse } from './sse.js';

export interface RunStreamOptions {
  /** Replay the log after this sequence number, then tail it. */
  readonly afterSeq: number;
  /** Keep the stream open across `workflow_paused`. */
  readonly continueOnPause?: boolean;
  /** A `workflow_paused` below this sequence number was already resumed: not terminal. */
  readonly replayUntil?: number;
  readonly headers?: Record<string, string>;
}

/**
 * Whether an event ends a run stream (Dify: `workflow_finished`, `workflow_paused`, `error`): a
 * terminal run event (`isTerminal`), except a failed chatflow's `workflow_finished` (its `error`
 * event follows) and a pause the stream continues across or that was already resumed; and `error`.
 */
function endsStream(payload: Record<string, unknown>, seq: number, opts: RunStreamOptions): boolean {
  const event = payload.event;
  if (event === 'error') return true;
  if (!isTerminal(event)) return false;
  if (event === 'workflow_paused') return !opts.continueOnPause && seq >= (opts.replayUntil ?? 0);
  const chat = 'conversation_id' in payload;
  const status = (payload.data as { status?: string } | undefined)?.status;
  return !(chat && status === 'failed');
}

/**
 * Serves a run as SSE: a leading ping, then "replay the log from the cursor, then tail" until a
 * terminal event. A client that goes away only ends its own stream, never the run; one that does
 * not read holds at most `SSE_MAX_BUFFERED_BYTES` (plus one event) while the stream waits for it.
 */
export async function streamRun(reply: FastifyReply, runtime: Pick<Runtime, 'config' | 'runs'>, runId: string, opts: RunStreamOptions): Promise<void> {
  // cut by a shutdown, the stream's last frame names the run to follow again (GET /workflow/{id}/events)
  const sse = openSse(reply, {
    leadingPing: true,
    shutdownFields: { workflow_run_id: runId },
    ...(opts.headers ? { headers: opts.headers } : {}),
    maxBufferedBytes: runtime.config.httpServer.sseMaxBufferedBytes,
    slowClient: 'wait',
  });
  try {
    for await (const e of runtime.runs.events(runId, opts.afterSeq, sse.signal)) {
      if (!sse.send(e.payload)) break;
      if (endsStream(e.payload, e.seq, opts)) break;
      // a client that does not keep up pauses the reading of the log (the run goes on; the log keeps every event)
      if (!(await sse.drained())) break;
    }
  } catch (err) {
    reply.log.warn({ err, runId }, 'run stream failed');
  } finally {
    sse.end();
  }
}
