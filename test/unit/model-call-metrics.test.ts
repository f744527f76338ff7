import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/infra/metrics.js';
import type { GenerateChunk, GenerateRequest, ModelProvider, ModelProviders } from '../../src/llm/model-provider.js';

const source = { runsByStatus: async () => ({}), jobsByStatus: async () => ({}), codeSandboxWorkers: () => ({}) };
const req = { model: 'm', mode: 'chat', messages: [{ role: 'user', content: 'hi' }], params: {} } as unknown as GenerateRequest;

/** A provider whose stream yields two tokens and a usage chunk, then fails when `fail` is set. */
function provider(fail = false): ModelProvider {
  return {
    name: 'fake',
    async *stream(): AsyncIterable<GenerateChunk> {
      yield { type: 'text', text: 'a' };
      yield { type: 'text', text: 'b' };
      yield { type: 'usage', usage: { promptTokens: 5, completionTokens: 2 } };
      if (fail) throw new Error('upstream broke off');
    },
  } as unknown as ModelProvider;
}

async function value(m: Metrics, name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of (await m.registry.getMetricsAsJSON()).filter((x) => x.name === name)) {
    for (const v of metric.values as { metricName?: string; labels: object; value: number }[]) out[`${v.metricName ?? name}${JSON.stringify(v.labels)}`] = v.value;
  }
  return out;
}

describe('model call metrics', () => {
  it('a whole stream is timed once and its tokens counted; the same wrapper serves each name', async () => {
    const m = new Metrics(source);
    const p = provider();
    const providers = m.instrumentProviders({ get: () => p } as ModelProviders);
    expect(providers.get('openai')).toBe(providers.get('openai'));
    const chunks: GenerateChunk[] = [];
    for await (const c of providers.get('openai').stream(req)) chunks.push(c);
    expect(chunks.map((c) => c.type)).toEqual(['text', 'text', 'usage']);
    expect((await value(m, 'dovetail_model_call_duration_seconds'))['dovetail_model_call_duration_seconds_count{"provider":"openai"}']).toBe(1);
    const tokens = await value(m, 'dovetail_model_tokens_total');
    expect(tokens['dovetail_model_tokens_total{"provider":"openai","kind":"prompt"}']).toBe(5);
    expect(tokens['dovetail_model_tokens_total{"provider":"openai","kind":"completion"}']).toBe(2);
    expect(await value(m, 'dovetail_model_call_errors_total')).toEqual({});
  });

  it('a stream that fails is counted as an error once, and timed', async () => {
    const m = new Metrics(source);
    const providers = m.instrumentProviders({ get: () => provider(true) } as ModelProviders);
    await expect((async () => { for await (const _ of providers.get('openai').stream(req)) void _; })()).rejects.toThrow('upstream broke off');
    expect((await value(m, 'dovetail_model_call_errors_total'))['dovetail_model_call_errors_total{"provider":"openai"}']).toBe(1);
    expect((await value(m, 'dovetail_model_call_duration_seconds'))['dovetail_model_call_duration_seconds_count{"provider":"openai"}']).toBe(1);
  });

  it('a consumer that stops early ends the timing without an error, and closes the stream', async () => {
    const m = new Metrics(source);
    let closed = false;
    const p = {
      name: 'fake',
      async *stream(): AsyncIterable<GenerateChunk> {
        try {
          yield { type: 'text', text: 'a' };
          yield { type: 'text', text: 'b' };
        } finally {
          closed = true;
        }
      },
    } as unknown as ModelProvider;
    const providers = m.instrumentProviders({ get: () => p } as ModelProviders);
    for await (const c of providers.get('openai').stream(req)) if (c.type === 'text') break;
    expect(closed).toBe(true);
    expect((await value(m, 'dovetail_model_call_duration_seconds'))['dovetail_model_call_duration_seconds_count{"provider":"openai"}']).toBe(1);
    expect(await value(m, 'dovetail_model_call_errors_total')).toEqual({});
  });
});
