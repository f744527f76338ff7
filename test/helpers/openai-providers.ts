import type { GenerateChunk, GenerateRequest, ModelProvider, ModelProviders } from '../../src/llm/model-provider.js';

/**
 * Test-only `ModelProviders`: every provider name streams from an OpenAI-compatible base URL
 * (the fake upstream) over the real chat-completions SSE protocol, honouring the abort signal.
 * Stands in until the provider registry of the completion issue is wired into the runtime.
 */
export function openAiCompatibleProviders(baseUrl: string): ModelProviders & { names: string[] } {
  const names: string[] = [];
  const provider: ModelProvider = {
    async *stream(req: GenerateRequest): AsyncIterable<GenerateChunk> {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer test' },
        body: JSON.stringify({ model: req.model, messages: req.messages, stream: true, stream_options: { include_usage: true } }),
        signal: req.signal,
      });
      if (!res.ok) throw new Error(`upstream answered ${res.status}: ${await res.text()}`);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = frame.replace(/^data: /, '');
          if (data === '[DONE]') return;
          const json = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; usage?: { prompt_tokens: number; completion_tokens: number } };
          const text = json.choices?.[0]?.delta?.content;
          if (text) yield { type: 'text', text };
          if (json.usage) yield { type: 'usage', usage: { promptTokens: json.usage.prompt_tokens, completionTokens: json.usage.completion_tokens } };
        }
      }
      throw new Error('upstream closed the stream early');
    },
  };
  return {
    names,
    get(name: string) {
      names.push(name);
      return provider;
    },
  };
}
