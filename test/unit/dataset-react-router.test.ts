import { describe, expect, it } from 'vitest';
import { parseReactDecision, reactRouterChatPrompt, reactRouterCompletionPrompt } from '../../src/messages/dataset-react-router.js';
import { functionCallingModels, modelCallsFunctions } from '../../src/llm/model-provider.js';
import { readProviderSettings } from '../../src/llm/provider-settings.js';
import { ProviderRegistry } from '../../src/llm/provider-registry.js';

/** Dify's ReAct dataset router: its prompt and `StructuredChatOutputParser`, cases from its parser. */
describe('ReAct dataset router: parsing the model\'s answer as Dify\'s StructuredChatOutputParser', () => {
  it('a fenced JSON action names the tool, with or without a language tag and text around it', () => {
    expect(parseReactDecision('Thought: recipes\nAction:\n```\n{"action": "ds-1", "action_input": "flour"}\n```')).toEqual({ kind: 'action', tool: 'ds-1' });
    expect(parseReactDecision('```json\n{"action": "ds-2"}```')).toEqual({ kind: 'action', tool: 'ds-2' });
    expect(parseReactDecision('Action: ```{"action":"ds-3","action_input":{}}``` and more ```{"action":"ds-4"}```')).toEqual({ kind: 'action', tool: 'ds-3' });
  });

  it('raw newlines inside strings are accepted (json strict=False); a block that starts with "[" is no action', () => {
    // Dify's pattern wants "{" right after the fence: a list is not matched, so the answer is a finish
    expect(parseReactDecision('```\n[{"action": "a"}, {"action": "b"}]\n```')).toEqual({ kind: 'finish' });
    expect(parseReactDecision('```\n{"action": "a", "action_input": "two\nlines"}\n```')).toEqual({ kind: 'action', tool: 'a' });
  });

  it('"Final Answer" and an answer without a fenced block are finishes (no dataset)', () => {
    expect(parseReactDecision('```\n{"action": "Final Answer", "action_input": "hi"}\n```')).toEqual({ kind: 'finish' });
    expect(parseReactDecision('I will just answer: pancakes need flour.')).toEqual({ kind: 'finish' });
    expect(parseReactDecision('')).toEqual({ kind: 'finish' });
  });

  it('a block that is not JSON, or has no action, cannot be parsed (Dify raises; its router picks none)', () => {
    expect(parseReactDecision('```\n{"action": "ds-1",\n```')).toEqual({ kind: 'unparsable' });
    expect(parseReactDecision('```\n{"tool": "ds-1"}\n```')).toEqual({ kind: 'unparsable' });
    expect(parseReactDecision('```{not json}```')).toEqual({ kind: 'unparsable' });
  });

  it('a non-string action is returned as written (the caller accepts only an app dataset\'s id)', () => {
    expect(parseReactDecision('```{"action": 7}```')).toEqual({ kind: 'action', tool: 7 });
  });
});

describe('ReAct dataset router: the prompt', () => {
  const tools = [
    { name: 'id-a', description: 'useful for when you want to answer queries about the Handbook' },
    { name: 'id-b', description: 'Recipes and baking' },
  ];

  it('chat: the tools with Dify\'s query argument, the quoted names and the suffix in the system message; the query as the user\'s', () => {
    const [system, user] = reactRouterChatPrompt('flour?', tools);
    expect(user).toEqual({ role: 'user', content: 'flour?' });
    expect(system!.role).toBe('system');
    const text = system!.content as string;
    expect(text.startsWith('Respond to the human as helpfully and accurately as possible. You have access to the following tools:\n\nid-a: useful for when you want to answer queries about the Handbook, args: {\'query\': {\'title\': \'Query\', \'description\': \'Query for the dataset to be used to retrieve the dataset.\', \'type\': \'string\'}}\nid-b: Recipes and baking, args:')).toBe(true);
    expect(text).toContain('Valid "action" values: "Final Answer" or "id-a", "id-b"\n\nProvide only ONE action per $JSON_BLOB, as shown:\n\n```\n{\n"action": $TOOL_NAME,\n"action_input": $INPUT\n}\n```');
    expect(text.endsWith('\n\nBegin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. Respond directly if appropriate. Format is Action:```$JSON_BLOB```then Observation:.\nThought:')).toBe(true);
  });

  it('completion: Dify\'s zero-shot template, names unquoted, {input} left as Dify leaves it', () => {
    const text = reactRouterCompletionPrompt(tools);
    expect(text).toContain('\n\nid-a: useful for when you want to answer queries about the Handbook\nid-b: Recipes and baking\n\n');
    expect(text).toContain('Valid "action" values: "Final Answer" or id-a, id-b\n');
    expect(text.endsWith('Question: {input}\nThought: {agent_scratchpad}\n')).toBe(true);
  });
});

describe('NAME_FUNCTION_CALLING', () => {
  it('true or unset: every model; false: none; a list: those models', () => {
    expect(functionCallingModels(undefined)('m')).toBe(true);
    expect(functionCallingModels('TRUE')('m')).toBe(true);
    expect(functionCallingModels('false')('m')).toBe(false);
    const some = functionCallingModels(' llama3.1 , qwen2.5 ');
    expect([some('llama3.1'), some('qwen2.5'), some('gemma')]).toEqual([true, true, false]);
  });
});

describe('NAME_FUNCTION_CALLING through the provider settings', () => {
  it('the environment or dovetail.yaml (a YAML boolean too) reaches the OpenAI-compatible provider; others keep every model', () => {
    const env: Record<string, string> = { OLLAMA_BASE_URL: 'http://127.0.0.1:1/v1', VLLM_BASE_URL: 'http://127.0.0.1:2/v1', VLLM_FUNCTION_CALLING: 'qwen2.5', ANTHROPIC_API_KEY: 'k' };
    const config = readProviderSettings((k) => env[k], { ollama: { function_calling: false }, my_gateway: { protocol: 'openai', base_url: 'http://127.0.0.1:3/v1', api_key: 'k', function_calling: 'true' } });
    expect(config.settings.ollama!.functionCalling).toBe('false');
    const registry = new ProviderRegistry(config);
    expect(modelCallsFunctions(registry.get('langgenius/ollama/ollama'), 'llama3.1')).toBe(false);
    expect(modelCallsFunctions(registry.get('vllm'), 'qwen2.5')).toBe(true);
    expect(modelCallsFunctions(registry.get('vllm'), 'phi3')).toBe(false);
    expect(modelCallsFunctions(registry.get('my_gateway'), 'any')).toBe(true);
    expect(modelCallsFunctions(registry.get('anthropic'), 'claude')).toBe(true);
    expect(() => readProviderSettings(() => undefined, { ollama: { function_calling: ['a'] } })).toThrow('providers.ollama.function_calling must be a string');
  });
});
