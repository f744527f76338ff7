import type { ChatMessage } from '../ports.js';
import type { NodeContext, NodeHandler } from '../types.js';
import { isObject } from './shared.js';
import { callModel, modelSpecOf, providerOf } from './model-call.js';
import { splitReasoning, ThinkStreamFilter } from './think-tags.js';

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
    // Reasoning arrives inside `<think>` (as from Dify's plugins). Dify's `reasoning_format`:
    // `tagged` (the default) keeps it in `text`; `separated` streams and outputs the text without
    // it and the reasoning as `reasoning_content`.
    const separated = ctx.node.data.reasoning_format === 'separated';
    const filter = separated ? new ThinkStreamFilter() : undefined;
    const emit = (piece: string) => piece && ctx.emit({ type: 'text', text: piece, selector: [ctx.node.id, 'text'] });
    const result = await callModel(ctx, model, messages, (piece) => emit(filter ? filter.feed(piece) : piece));
    if (filter) emit(filter.end());
    const { text, reasoning } = separated ? splitReasoning(result.text) : { text: result.text, reasoning: '' };
    const usage = result.usage;
    return {
      type: 'succeeded',
      inputs: null,
      processData: { model_mode: model.mode, prompts: messages, model_provider: model.provider, model_name: model.name },
      outputs: { text, reasoning_content: reasoning, usage, finish_reason: 'stop' },
      usage,
    };
  },
};
