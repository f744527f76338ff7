import { NODE_HANDLERS } from './nodes/registry.js';
import { isObject } from './nodes/shared.js';
import { failedNodeData, isStop, type NodeContext, type NodeResult } from './types.js';

export type { NodeResult } from './types.js';

interface RetryConfig {
  readonly max: number;
  readonly intervalMs: number;
}

function retryConfig(data: Readonly<Record<string, unknown>>): RetryConfig {
  const r = data.retry_config;
  if (!isObject(r) || r.retry_enabled !== true) return { max: 0, intervalMs: 0 };
  const max = typeof r.max_retries === 'number' ? Math.max(0, Math.min(10, r.max_retries)) : 0;
  const intervalMs = typeof r.retry_interval === 'number' ? Math.max(0, Math.min(5000, r.retry_interval)) : 0;
  return { max, intervalMs };
}

/** Values for `default-value`: `[{key, type, value}]`. */
function defaultValues(data: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!Array.isArray(data.default_value)) return out;
  for (const d of data.default_value) {
    if (!isObject(d) || typeof d.key !== 'string') continue;
    let v = d.value;
    if (d.type === 'number' && typeof v === 'string' && v.trim() !== '') v = Number(v);
    if ((d.type === 'object' || String(d.type).startsWith('array')) && typeof v === 'string') {
      try {
        v = JSON.parse(v);
      } catch {
        // keep the text
      }
    }
    out[d.key] = v;
  }
  return out;
}

/**
 * Runs one node: its handler, then `retry_config` (each failed attempt reported through
 * `onRetry`), then `error_strategy` (`fail-branch` / `default-value` end as `exception`).
 */
export async function executeNode(
  ctx: NodeContext,
  onRetry: (retryIndex: number, error: string) => void,
): Promise<NodeResult> {
  const handler = NODE_HANDLERS[ctx.node.type];
  const retry = retryConfig(ctx.node.data);
  const strategy = typeof ctx.node.data.error_strategy === 'string' ? ctx.node.data.error_strategy : null;
  let attempt = 0;
  for (;;) {
    try {
      // container nodes (loop, iteration) run their children through this function, handed down in
      // the context: the registry imports them, so they cannot import it
      const outcome = await handler.run(ctx.executeChild === executeNode ? ctx : { ...ctx, executeChild: executeNode });
      if (outcome.type === 'pause') return outcome;
      const handle = outcome.handle;
      return {
        type: 'succeeded',
        outputs: outcome.outputs,
        inputs: outcome.inputs ?? null,
        processData: outcome.processData ?? null,
        take: handle !== undefined ? (e) => e.handle === handle : (e) => e.handle !== 'fail-branch',
        usage: outcome.usage,
        error: null,
        errorStrategy: strategy,
        ...(outcome.retrieverResources ? { retrieverResources: outcome.retrieverResources } : {}),
      };
    } catch (err) {
      if (isStop(err, ctx.signal)) return { type: 'stopped' };
      const message = (err as Error)?.message || String(err);
      const retryable = (err as { retryable?: boolean }).retryable !== false;
      if (retryable && attempt < retry.max) {
        onRetry(attempt, message);
        attempt++;
        if (retry.intervalMs > 0) await ctx.ports.sleep(retry.intervalMs, ctx.signal).catch(() => undefined);
        if (ctx.signal.aborted) return { type: 'stopped' };
        continue;
      }
      const errorType = (err as { type?: string }).type ?? 'NodeError';
      const data = failedNodeData(err);
      const inputs = data.inputs ?? null;
      const processData = data.processData ?? null;
      if (strategy === 'fail-branch') {
        return {
          type: 'exception',
          outputs: { error_message: message, error_type: errorType },
          inputs,
          processData,
          take: (e) => e.handle === 'fail-branch',
          usage: undefined,
          error: message,
          errorStrategy: strategy,
        };
      }
      if (strategy === 'default-value') {
        return {
          type: 'exception',
          outputs: { ...defaultValues(ctx.node.data), error_message: message, error_type: errorType },
          inputs,
          processData,
          take: (e) => e.handle !== 'fail-branch',
          usage: undefined,
          error: message,
          errorStrategy: strategy,
        };
      }
      return { type: 'failed', error: message, inputs, processData };
    }
  }
}
