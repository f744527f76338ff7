import { describe, expect, it } from 'vitest';
import { parseQaPairs } from '../../src/knowledge/ingest/qa.js';

describe('Q&A pairs from the model answer', () => {
  it('reads Qn/An pairs and ignores a reasoning model’s <think> block (which may draft pairs of its own)', () => {
    const answer = '<think>\nQ1: draft? A1: draft.\n</think>Q1: What do owls eat?\nA1: Mice.\nQ2: When?\nA2: At night.';
    expect(parseQaPairs(answer)).toEqual([
      { question: 'What do owls eat?', answer: 'Mice.' },
      { question: 'When?', answer: 'At night.' },
    ]);
  });
});
