import { describe, expect, it } from 'vitest';
import { parseReact } from '../../src/engine/agent/react-parse.js';

describe('ReAct answer parsing (Dify CoT format)', () => {
  it('an Action blob in a code fence, with its thought', () => {
    expect(parseReact('Thought: look it up\nAction:\n```json\n{"action": "search", "action_input": {"q": "x"}}\n```')).toEqual({
      type: 'action',
      thought: 'look it up',
      action: 'search',
      input: { q: 'x' },
      actionText: '{"action": "search", "action_input": {"q": "x"}}',
    });
  });

  it('Final Answer (any case), a non-string input, braces inside strings', () => {
    expect(parseReact('Action: {"action": "final answer", "action_input": "a {b} c"}')).toEqual({ type: 'final', thought: '', answer: 'a {b} c' });
    expect(parseReact('{"action": "Final Answer", "action_input": {"n": 1}}')).toMatchObject({ type: 'final', answer: '{"n":1}' });
  });

  it('no blob: the text is the answer (after a "Final Answer:" label when there is one)', () => {
    expect(parseReact('Just 42.')).toEqual({ type: 'final', thought: '', answer: 'Just 42.' });
    expect(parseReact('Thought: done\nFinal Answer: 42')).toEqual({ type: 'final', thought: '', answer: '42' });
  });

  it('skips JSON that is no action and bounds the work on adversarial text', () => {
    expect(parseReact('{"x": 1} then {"action": "t", "action_input": "v"}')).toMatchObject({ type: 'action', action: 't', input: 'v' });
    const nested = '{'.repeat(100_000) + '}'.repeat(100_000);
    expect(parseReact(nested).type).toBe('final');
    expect(parseReact(' '.repeat(100_000) + 'Action: x').type).toBe('final');
  });
});
