import { splitModelRef, type ModelProviders } from '../../llm/model-provider.js';
import { splitReasoning } from '../../engine/nodes/think-tags.js';

/** Dify's `GENERATOR_QA_PROMPT` (core/llm_generator/prompts.py), in the document's language. */
export function qaPrompt(language: string): string {
  return (
    '<Task> The user will send a long text. Generate a Question and Answer pairs only using the knowledge' +
    ' in the long text. Please think step by step.' +
    'Step 1: Understand and summarize the main content of this text.\n' +
    'Step 2: What key information or concepts are mentioned in this text?\n' +
    'Step 3: Decompose or combine multiple pieces of information and concepts.\n' +
    'Step 4: Generate questions and answers based on these key information and concepts.\n' +
    '<Constraints> The questions should be clear and detailed, and the answers should be detailed and complete. ' +
    `You must answer in ${language}, in a style that is clear and detailed in ${language}.` +
    ` No language other than ${language} should be used. \n` +
    '<Format> Use the following format: Q1:\nA1:\nQ2:\nA2:...\n' +
    '<QA Pairs>'
  );
}

export interface QaPair {
  readonly question: string;
  readonly answer: string;
}

/** Dify's parser of the model's answer: `Qn: … An: …` pairs (reasoning in `<think>` left out); pairs missing either half are dropped. */
export function parseQaPairs(answer: string): QaPair[] {
  // A reasoning model's `<think>` block may itself hold draft "Q1:" lines: only the answer counts.
  const text = splitReasoning(answer).text;
  const out: QaPair[] = [];
  for (const m of text.matchAll(/Q\d+:\s*(.*?)\s*A\d+:\s*([\s\S]*?)(?=Q\d+:|$)/gu)) {
    const question = m[1]!.trim();
    const answer = m[2]!.trim().replace(/\n\s*/g, '\n');
    if (question && answer) out.push({ question, answer });
  }
  return out;
}

/** Asks the model for the Q&A pairs of one chunk (Dify: temperature 0.01, max_tokens 2000). */
export async function generateQaPairs(providers: ModelProviders, ref: string, chunk: string, language: string, signal: AbortSignal): Promise<QaPair[]> {
  const m = splitModelRef(ref);
  if (!m) throw new Error(`KNOWLEDGE_QA_MODEL must be provider/model, got ${ref}`);
  let text = '';
  for await (const c of providers.get(m.provider).stream({
    model: m.model,
    mode: 'chat',
    messages: [
      { role: 'system', content: qaPrompt(language) },
      { role: 'user', content: chunk },
    ],
    params: { temperature: 0.01, max_tokens: 2000 },
    signal,
  })) {
    if (c.type === 'text') text += c.text;
  }
  return parseQaPairs(text);
}
