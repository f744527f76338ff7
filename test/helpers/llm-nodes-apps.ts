import { startNode, workflowDsl } from './workflow-dsl.js';

const MODEL = { provider: 'openai', name: 'gpt-test', mode: 'chat', completion_params: {} };

/**
 * A chatflow whose every turn makes three model calls: a question classifier (`order` / `other`),
 * a parameter extractor (`city`, `days`; function calling, memory) on the `order` branch, then an
 * LLM that confirms the trip; `other` answers "Sorry.".
 */
export function classifierExtractorChatflow(): string {
  return workflowDsl(
    [
      startNode(),
      { id: 'qc', type: 'question-classifier', model: MODEL, query_variable_selector: ['sys', 'query'], classes: [{ id: 'order', name: 'Order' }, { id: 'other', name: 'Other' }] },
      {
        id: 'pe',
        type: 'parameter-extractor',
        model: MODEL,
        query: ['sys', 'query'],
        reasoning_mode: 'function_call',
        instruction: 'Names are in Norwegian.',
        memory: { window: { enabled: true, size: 5 } },
        parameters: [
          { name: 'city', type: 'string', description: 'the city', required: true },
          { name: 'days', type: 'number', description: 'how many days', required: false },
        ],
      },
      { id: 'llm', type: 'llm', model: MODEL, prompt_template: [{ role: 'user', text: 'Confirm a trip to {{#pe.city#}}' }] },
      { id: 'answer', type: 'answer', answer: '{{#llm.text#}}' },
      { id: 'other_answer', type: 'answer', answer: 'Sorry.' },
    ],
    [
      ['start', 'qc'],
      ['qc', 'pe', 'order'],
      ['qc', 'other_answer', 'other'],
      ['pe', 'llm'],
      ['llm', 'answer'],
    ],
    { mode: 'advanced-chat' },
  );
}
