import { messagesText, type GenerateChunk, type GenerateRequest, type ModelProvider } from './model-provider.js';

/**
 * **Mock** model: a built-in deterministic provider for demos and the example apps when no model
 * key is configured. The same prompt always streams the same answer, built from the prompt's own
 * words; it never calls a network. Usage is left to the tokenizer.
 */
export class MockProvider implements ModelProvider {
  readonly name = 'mock';

  async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
    const prompt = req.mode === 'completion' && req.prompt !== undefined ? req.prompt : messagesText(req.messages);
    const images = req.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content.filter((p) => p.type === 'image'))).length;
    for (const word of mockAnswer(prompt, images).split(/(?<= )/)) {
      if (req.signal?.aborted) throw req.signal.reason ?? new Error('aborted');
      yield { type: 'text', text: word };
    }
  }
}

/** The mock's answer for a prompt: reproducible, and visibly a mock. */
export function mockAnswer(prompt: string, images = 0): string {
  const words = prompt.replace(/\s+/g, ' ').trim().split(' ').filter(Boolean);
  const quoted = words.slice(0, 40).join(' ') + (words.length > 40 ? ' …' : '');
  const seen = images > 0 ? ` It was shown ${images} image${images === 1 ? '' : 's'}.` : '';
  return (
    `[mock model] This is a reproducible demo answer, not a real model. ` +
    `Your prompt (${words.length} words) was: "${quoted}".${seen} ` +
    `Set OPENAI_API_KEY or ANTHROPIC_API_KEY and change the app's model provider to get real answers.`
  );
}
