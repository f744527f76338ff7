import type { ChatMessage } from '../../llm/model-provider.js';
import { NodeFailure, type NodeContext, type NodeHandler } from '../types.js';
import { isObject } from './shared.js';

interface ModelSpec {
  readonly provider: string;
  readonly name: string;
  readonly mode: 'chat' | 'completion';
  readonly params: Record<string, unknown>;
}

function modelOf(data: Readonly<Record<string, unknown>>): ModelSpec {
  const m = data.model;
  if (!isObject(m)) throw new Error('model must be a mapping with provider and name');
  if (typeof m.provider !== 'string' || typeof m.name !== 'string') throw new Error('model.provider and model.name must be strings');
  return {
    provider: m.provider,
    name: m.name,
    mode: m.mode === 'completion' ? 'completion' : 'chat',
    params: isObject(m.completion_params) ? m.completion_params : {},
  };
}

function templateMessages(ctx: NodeContext): { role: ChatMessage['role']; text: string }[] {
  const t = ctx.node.data.prompt_template;
  const items = Array.isArray(t) ? t : isObject(t) ? [{ role: 'user', ...t }] : [];
  return items.filter(isObject).map((m) => {
    const raw = m.edition_type === 'jinja2' && typeof m.jinja2_text === 'string' ? m.jinja2_text : String(m.text ?? '');
    const role = m.role === 'system' || m.role === 'assistant' ? m.role : 'user';
    return { role, text: ctx.pool.render(raw) };
  });
}

/** Builds the chat messages: system prompts, memory window (chatflow), the rest, then the query. */
async function buildMessages(ctx: NodeContext): Promise<ChatMessage[]> {
  const tpl = templateMessages(ctx).filter((m) => m.text !== '');
  const out: ChatMessage[] = tpl.filter((m) => m.role === 'system').map((m) => ({ role: m.role, content: m.text }));
  const memory = ctx.node.data.memory;
  if (isObject(memory) && ctx.kind === 'advanced-chat' && ctx.conversationId && ctx.ports.memory) {
    const w = isObject(memory.window) ? memory.window : {};
    const size = w.enabled === true && typeof w.size === 'number' ? w.size : 50;
    out.push(...(await ctx.ports.memory.history(ctx.conversationId, size)));
  }
  out.push(...tpl.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.text })));
  if (isObject(memory) && ctx.kind === 'advanced-chat') {
    const q = typeof memory.query_prompt_template === 'string' && memory.query_prompt_template ? memory.query_prompt_template : '{{#sys.query#}}';
    const text = ctx.pool.render(q).trim();
    if (text) out.push({ role: 'user', content: text });
  }
  return out;
}

/** A chat model call through the provider port, streaming its text as it arrives. */
export const llmNode: NodeHandler = {
  validate(node) {
    modelOf(node.data);
  },
  async run(ctx) {
    const model = modelOf(ctx.node.data);
    const providers = ctx.ports.providers;
    if (!providers) throw new NodeFailure('no model provider is configured on this server', 'ProviderNotInitialize', false);
    let provider;
    try {
      provider = providers.get(model.provider);
    } catch (err) {
      throw new NodeFailure((err as Error).message, 'ProviderNotInitialize', false, { cause: err });
    }
    const messages = await buildMessages(ctx);
    const started = ctx.ports.now();
    let text = '';
    let promptTokens = 0;
    let completionTokens = 0;
    try {
      for await (const chunk of provider.stream({
        model: model.name,
        mode: model.mode,
        messages,
        prompt: model.mode === 'completion' ? messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n') : undefined,
        params: model.params,
        signal: ctx.signal,
      })) {
        if (chunk.type === 'text') {
          if (!chunk.text) continue;
          text += chunk.text;
          ctx.emit({ type: 'text', text: chunk.text, selector: [ctx.node.id, 'text'] });
        } else {
          promptTokens = chunk.usage.promptTokens ?? promptTokens;
          completionTokens = chunk.usage.completionTokens ?? completionTokens;
        }
      }
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new NodeFailure((err as Error).message || 'model invocation failed', 'LLMInvokeError', true, { cause: err });
    }
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      total_price: '0',
      currency: 'USD',
      latency: (ctx.ports.now() - started) / 1000,
    };
    return {
      type: 'succeeded',
      inputs: null,
      processData: { model_mode: model.mode, prompts: messages, model_provider: model.provider, model_name: model.name },
      outputs: { text, usage, finish_reason: 'stop' },
      usage: { promptTokens, completionTokens },
    };
  },
};
