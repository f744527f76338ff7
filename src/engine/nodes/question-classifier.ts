import type { ChatMessage } from '../ports.js';
import { NodeFailure, type GraphNode, type NodeContext, type NodeHandler } from '../types.js';
import { toText } from '../variable-pool.js';
import { JsonInTextError, parseJsonMarkdown } from './json-in-text.js';
import { memoryText, savedPrompts, visionParts, withFiles } from './llm-prompting.js';
import { splitReasoning } from './think-tags.js';
import { callModel, modelSpecOf, providerOf, type ModelSpec } from './model-call.js';
import { pyJsonDumps } from './python-json.js';
import { ASSISTANT_PROMPT_1, ASSISTANT_PROMPT_2, completionPrompt, systemPrompt, USER_PROMPT_1, USER_PROMPT_2, userPrompt3 } from './question-classifier-prompts.js';
import { isObject, selectorOf } from './shared.js';

interface ClassSpec {
  readonly id: string;
  readonly name: string;
  readonly label: string;
}

interface ClassifierSpec {
  readonly model: ModelSpec;
  readonly query: string[];
  readonly classes: readonly ClassSpec[];
}

/** Reads `model`, `query_variable_selector` and `classes`; throws a message naming the field. */
function specOf(node: GraphNode): ClassifierSpec {
  const d = node.data;
  const model = modelSpecOf(d.model, 'model');
  const query = selectorOf(d.query_variable_selector);
  if (!query) throw new Error('query_variable_selector must be a list of at least 2 names');
  if (!Array.isArray(d.classes) || d.classes.length === 0) throw new Error('classes must be a non-empty list of {id, name}');
  const seen = new Set<string>();
  const classes = d.classes.map((c, i) => {
    if (!isObject(c) || typeof c.id !== 'string' || c.id === '') throw new Error(`classes[${i}].id must be a non-empty string`);
    if (typeof c.name !== 'string') throw new Error(`classes[${i}].name must be a string`);
    if (seen.has(c.id)) throw new Error(`classes[${i}].id ${c.id} is used by another class`);
    seen.add(c.id);
    return { id: c.id, name: c.name, label: typeof c.label === 'string' ? c.label : '' };
  });
  return { model, query, classes };
}

/** Dify's prompt: instructions with the history, two worked examples, then the query with the categories. */
function classifierMessages(spec: ClassifierSpec, query: string, instruction: string, histories: string, ctx: NodeContext): ChatMessage[] {
  const categories = spec.classes.map((c) => ({ category_id: c.id, category_name: c.name }));
  if (spec.model.mode === 'completion') {
    // Dify prepends the (empty) memory text and a line break to a completion prompt without `#histories#`.
    const text = '\n' + completionPrompt({ histories, input_text: query, categories: pyJsonDumps(categories, false), classification_instructions: instruction });
    return [{ role: 'user', content: ctx.pool.render(text) }];
  }
  const raw: ChatMessage[] = [
    { role: 'system', content: systemPrompt(histories) },
    { role: 'user', content: USER_PROMPT_1 },
    { role: 'assistant', content: ASSISTANT_PROMPT_1 },
    { role: 'user', content: USER_PROMPT_2 },
    { role: 'assistant', content: ASSISTANT_PROMPT_2 },
    { role: 'user', content: userPrompt3({ input_text: query, categories: pyJsonDumps(categories, false), classification_instructions: instruction }) },
  ];
  // Each message is a template to Dify, as the LLM node's are.
  return raw.map((m) => ({ role: m.role, content: ctx.pool.render(m.content as string) })).filter((m) => m.content !== '');
}

/** The class the answer names by `category_id`; the first class when it names none of them. */
function pickClass(classes: readonly ClassSpec[], answer: string): { cls: ClassSpec; index: number } {
  const json = parseJsonMarkdown(splitReasoning(answer).text);
  if ('category_name' in json && 'category_id' in json) {
    const index = classes.findIndex((c) => c.id === json.category_id);
    if (index >= 0) return { cls: classes[index]!, index };
  }
  return { cls: classes[0]!, index: 0 };
}

/**
 * Dify's question classifier: asks the model which of `classes` the query belongs to (its JSON
 * answer's `category_id`) and follows the edge whose `sourceHandle` is that class id.
 */
export const questionClassifierNode: NodeHandler = {
  branch: true,
  validate(node) {
    specOf(node);
  },
  async run(ctx) {
    const spec = specOf(ctx.node);
    providerOf(ctx, spec.model);
    const value = ctx.pool.get(spec.query);
    const query = toText(value);
    const instruction = ctx.pool.render(typeof ctx.node.data.instruction === 'string' ? ctx.node.data.instruction : '');
    const histories = await memoryText(ctx);
    const messages = withFiles(classifierMessages(spec, query, instruction, histories, ctx), visionParts(ctx));
    const answer = await callModel(ctx, spec.model, messages);
    const usage = answer.usage;
    let picked: { cls: ClassSpec; index: number };
    try {
      picked = pickClass(spec.classes, answer.text);
    } catch (err) {
      if (err instanceof JsonInTextError) throw new NodeFailure(err.message, err.name, false, { cause: err });
      throw err;
    }
    const { cls, index } = picked;
    return {
      type: 'succeeded',
      inputs: { query: value ?? null, model_provider: spec.model.provider, model_name: spec.model.name },
      processData: {
        model_mode: spec.model.mode,
        prompts: savedPrompts(spec.model.mode, messages),
        usage,
        finish_reason: 'stop',
        model_provider: spec.model.provider,
        model_name: spec.model.name,
      },
      outputs: {
        class_name: ctx.pool.render(cls.name),
        class_label: cls.label || `CLASS ${index + 1}`,
        class_id: cls.id,
        usage,
      },
      handle: cls.id,
      usage,
    };
  },
};
