import type { ChatMessage } from '../../llm/model-provider.js';
import type { NodeContext, NodeHandler } from '../types.js';
import { isObject } from './shared.js';
import { callModel, modelSpecOf, providerOf } from './model-call.js';

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
    modelSpecOf(node.data.model, 'model');
  },
  async run(ctx) {
    const model = modelSpecOf(ctx.node.data.model, 'model');
    providerOf(ctx, model);
    const messages = await buildMessages(ctx);
    const { text, usage } = await callModel(ctx, model, messages, (piece) => ctx.emit({ type: 'text', text: piece, selector: [ctx.node.id, 'text'] }));
    return {
      type: 'succeeded',
      inputs: null,
      processData: { model_mode: model.mode, prompts: messages, model_provider: model.provider, model_name: model.name },
      outputs: { text, usage, finish_reason: 'stop' },
      usage,
    };
  },
};
