import type { ChatMessage } from '../ports.js';
import { failedWith, NodeFailure, type NodeContext, type NodeHandler } from '../types.js';
import { contextOf, InvalidContextStructure, type RetrieverResource } from '../retriever-resources.js';
import { isObject, selectorOf } from './shared.js';
import { callModel, modelSpecOf, providerOf } from './model-call.js';
import { splitReasoning, ThinkStreamFilter } from './think-tags.js';

/** The `{{#context#}}` placeholder of an LLM node's prompts. */
const CONTEXT_REF = '{{#context#}}';

/**
 * The node's context (`context.enabled`, `context.variable_selector`), as Dify's `_fetch_context`:
 * undefined when it has none; a knowledge-retrieval `result` also gives the answer's citations.
 */
function fetchContext(ctx: NodeContext): { context: string; resources: RetrieverResource[] } | undefined {
  const c = ctx.node.data.context;
  if (!isObject(c) || c.enabled !== true) return undefined;
  const selector = selectorOf(c.variable_selector);
  if (!selector) return undefined;
  try {
    return contextOf(ctx.pool.get(selector));
  } catch (err) {
    if (err instanceof InvalidContextStructure) throw new NodeFailure(err.message, err.name, false);
    throw err;
  }
}

/**
 * A basic (not jinja2) prompt rendered with the pool, `{{#context#}}` replaced by the context when
 * the node has one. The pieces around the placeholder are rendered, not the context: text a
 * document brings cannot name the run's variables.
 */
function renderPrompt(ctx: NodeContext, raw: string, context: string | undefined): string {
  if (context === undefined) return ctx.pool.render(raw);
  return raw.split(CONTEXT_REF).map((piece) => ctx.pool.render(piece)).join(context);
}

function templateMessages(ctx: NodeContext, context: string | undefined): { role: ChatMessage['role']; text: string }[] {
  const t = ctx.node.data.prompt_template;
  const items = Array.isArray(t) ? t : isObject(t) ? [{ role: 'user', ...t }] : [];
  return items.filter(isObject).map((m) => {
    const jinja = m.edition_type === 'jinja2' && typeof m.jinja2_text === 'string';
    const role = m.role === 'system' || m.role === 'assistant' ? m.role : 'user';
    return { role, text: jinja ? ctx.pool.render(m.jinja2_text as string) : renderPrompt(ctx, String(m.text ?? ''), context) };
  });
}

/** Builds the chat messages: system prompts, memory window (chatflow), the rest, then the query. */
async function buildMessages(ctx: NodeContext, context: string | undefined): Promise<ChatMessage[]> {
  const tpl = templateMessages(ctx, context).filter((m) => m.text !== '');
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
    const fetched = fetchContext(ctx);
    const messages = await buildMessages(ctx, fetched?.context);
    // Reasoning arrives inside `<think>` (as from Dify's plugins). Dify's `reasoning_format`:
    // `tagged` (the default) keeps it in `text`; `separated` streams and outputs the text without
    // it and the reasoning as `reasoning_content`.
    const separated = ctx.node.data.reasoning_format === 'separated';
    const filter = separated ? new ThinkStreamFilter() : undefined;
    const emit = (piece: string) => piece && ctx.emit({ type: 'text', text: piece, selector: [ctx.node.id, 'text'] });
    const processData = { model_mode: model.mode, prompts: messages, model_provider: model.provider, model_name: model.name };
    let result: Awaited<ReturnType<typeof callModel>>;
    try {
      result = await callModel(ctx, model, messages, (piece) => emit(filter ? filter.feed(piece) : piece));
    } catch (err) {
      throw failedWith(err, { inputs: fetched ? { '#context#': fetched.context } : null, processData });
    }
    if (filter) emit(filter.end());
    const { text, reasoning } = separated ? splitReasoning(result.text) : { text: result.text, reasoning: '' };
    const usage = result.usage;
    return {
      type: 'succeeded',
      inputs: fetched ? { '#context#': fetched.context } : null,
      processData,
      outputs: { text, reasoning_content: reasoning, usage, finish_reason: 'stop' },
      usage,
      // the citations reach the answer's `message_end` (the app's `retriever_resource` feature decides)
      ...(fetched && fetched.resources.length > 0 ? { retrieverResources: fetched.resources } : {}),
    };
  },
};
