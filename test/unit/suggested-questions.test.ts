import { describe, expect, it } from 'vitest';
import { countTokens } from '../../src/text/tokenizer.js';
import {
  DEFAULT_SUGGESTED_QUESTIONS_PROMPT,
  historyText,
  parseSuggestedQuestions,
  suggestedQuestionsPrompt,
} from '../../src/messages/suggested-questions.js';

describe('suggested questions: Dify\'s prompt and parser', () => {
  it('history lines are dropped oldest first until the text fits the token limit; one line always stays', async () => {
    const count = async (texts: readonly string[]) => texts.map((t) => countTokens(t));
    const turns = [
      { query: 'first question here', answer: 'first answer here' },
      { query: 'second question', answer: 'second answer' },
    ];
    const all = await historyText(turns, 3000, count);
    expect(all).toBe('Human: first question here\nAssistant: first answer here\nHuman: second question\nAssistant: second answer');
    const limit = countTokens('Human: second question\nAssistant: second answer');
    expect(await historyText(turns, limit, count)).toBe('Human: second question\nAssistant: second answer');
    expect(await historyText(turns, 1, count)).toBe('Assistant: second answer');
  });

  it('a blank custom prompt means the default; template variables in values are defused and <|…|> removed', () => {
    expect(suggestedQuestionsPrompt('Human: hi', '  ')).toBe(`Human: hi\n${DEFAULT_SUGGESTED_QUESTIONS_PROMPT}\nquestions:\n`);
    expect(suggestedQuestionsPrompt('Human: use {{name}} <|endoftext|>now')).toBe(`Human: use {name} now\n${DEFAULT_SUGGESTED_QUESTIONS_PROMPT}\nquestions:\n`);
  });

  it('parses the first bracketed JSON array only (Dify\'s non-greedy match)', () => {
    expect(parseSuggestedQuestions('Here: ["a","b"] and ["c"]')).toEqual(['a', 'b']);
    expect(parseSuggestedQuestions('["a [x]", "b"]')).toEqual([]);
    expect(parseSuggestedQuestions('<think>pondering without end [1]')).toEqual([]);
    expect(parseSuggestedQuestions('<think>pondering ["x"]')).toEqual(['x']);
    expect(parseSuggestedQuestions('')).toEqual([]);
  });
});

describe('suggested questions: settings', () => {
  it('SUGGESTED_QUESTIONS_MODEL must be provider/model; the limits must be positive integers', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const env = { DOVETAIL_CONFIG: undefined as unknown as string };
    expect(loadConfig(env).suggestedQuestions).toEqual({ model: undefined, maxTokens: 256, timeoutSeconds: 30, historyMessages: 3, historyMaxTokens: 3000 });
    expect(loadConfig({ ...env, SUGGESTED_QUESTIONS_MODEL: 'openai/gpt-4o-mini' }).suggestedQuestions.model).toBe('openai/gpt-4o-mini');
    expect(() => loadConfig({ ...env, SUGGESTED_QUESTIONS_MODEL: 'gpt-4o-mini' })).toThrow(
      'SUGGESTED_QUESTIONS_MODEL must be provider/model (e.g. openai/gpt-4o-mini), got "gpt-4o-mini"',
    );
    expect(() => loadConfig({ ...env, SUGGESTED_QUESTIONS_HISTORY_MESSAGES: '0' })).toThrow('SUGGESTED_QUESTIONS_HISTORY_MESSAGES must be at least 1, got 0');
  });
});
