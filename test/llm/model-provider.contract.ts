import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProviderError } from '../../src/llm/errors.js';
import type { GenerateChunk, GenerateRequest, ModelProvider } from '../../src/llm/model-provider.js';
import type { ScriptedUpstream } from '../helpers/scripted-upstreams.js';

export interface ProviderContractSubject {
  /** The provider under test, pointed at `upstream`. */
  readonly provider: ModelProvider;
  /** A local fake of the provider's wire protocol (test/helpers/scripted-upstreams.ts). */
  readonly upstream: ScriptedUpstream;
  /** The same provider pointed at an address where nothing listens. */
  unreachable(): ModelProvider;
  close(): Promise<void>;
}

const request = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({ model: 'contract-model', mode: 'chat', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me about owls' }], params: {}, ...over });

/**
 * The contract every ModelProvider meets against its upstream's wire protocol: the answer streams
 * delta by delta as the upstream sends it, usage is reported once after the text, `onSent` fires
 * once before the first chunk, an abort stops the iteration and closes the upstream connection,
 * and upstream refusals and unreachable upstreams are `completion_request_error` (HTTP 400) with the
 * upstream's message.
 */
export function describeModelProviderContract(name: string, open: () => Promise<ProviderContractSubject>): void {
  describe(`ModelProvider contract: ${name}`, () => {
    let subject: ProviderContractSubject;
    beforeAll(async () => {
      subject = await open();
    });
    afterAll(async () => subject?.close());

    it('streams the answer text in order, then the usage once, after onSent', async () => {
      const text = ['Owls ', 'hunt ', 'at ', 'night', '. Ünïcode ✓'];
      subject.upstream.answer({ text, usage: { prompt: 17, completion: 5 } });
      const chunks: GenerateChunk[] = [];
      let sent = 0;
      for await (const c of subject.provider.stream(request({ onSent: () => sent++ }))) {
        // 1. onSent has fired before anything arrives
        expect(sent).toBe(1);
        chunks.push(c);
      }
      expect(sent).toBe(1);
      // deltas that arrive in one network read may come as one chunk; none is empty (that the first
      // comes before the rest exists is the abort case below)
      const texts = chunks.flatMap((c) => (c.type === 'text' ? [c.text] : []));
      expect(texts.join('')).toBe(text.join(''));
      expect(texts.every((t) => t.length > 0)).toBe(true);
      const usage = chunks.filter((c) => c.type === 'usage');
      expect(usage).toEqual([{ type: 'usage', usage: { promptTokens: 17, completionTokens: 5 } }]);
      // 2. usage comes after the last text
      expect(chunks.at(-1)!.type).toBe('usage');
      expect(chunks.some((c) => c.type === 'tool_calls')).toBe(false);
      // 3. the request reached the upstream with the model and the user's words
      const last = subject.upstream.requests.at(-1)!;
      expect(JSON.stringify(last.body)).toContain('Tell me about owls');
      expect(`${last.path} ${JSON.stringify(last.body)}`).toContain('contract-model');
    });

    it('streams: the first delta arrives while the upstream holds the rest; an abort then ends the iteration with an error and closes the connection', async () => {
      subject.upstream.stall('first words ');
      const ac = new AbortController();
      const seen: string[] = [];
      const closed = subject.upstream.closedEarly();
      await expect(
        (async () => {
          for await (const c of subject.provider.stream(request({ signal: ac.signal }))) {
            if (c.type === 'text') seen.push(c.text);
            ac.abort(new Error('stopped by the caller'));
          }
        })(),
      ).rejects.toBeTruthy();
      expect(seen).toEqual(['first words ']);
      await closed;
      // the provider still serves the next request
      subject.upstream.answer({ text: ['again'], usage: { prompt: 1, completion: 1 } });
      let again = '';
      for await (const c of subject.provider.stream(request())) if (c.type === 'text') again += c.text;
      expect(again).toBe('again');
    });

    it('an upstream refusal is completion_request_error (400) with the upstream status and message', async () => {
      for (const [status, message] of [
        [400, 'max_tokens is too large for this model'],
        [401, 'invalid api key'],
        [429, 'rate limit reached for requests'],
        [500, 'the model is on fire'],
      ] as const) {
        subject.upstream.fail(status, message);
        const err = await (async () => {
          for await (const c of subject.provider.stream(request())) void c;
        })().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isProviderError(err), `${status}: ${String(err)}`).toBe(true);
        expect(err).toMatchObject({ code: 'completion_request_error', status: 400 });
        expect((err as Error).message).toContain(message);
        expect((err as Error).message).toContain(String(status));
      }
    });

    it('an upstream where nothing listens is completion_request_error', async () => {
      const err = await (async () => {
        for await (const c of subject.unreachable().stream(request())) void c;
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isProviderError(err), String(err)).toBe(true);
      expect(err).toMatchObject({ code: 'completion_request_error', status: 400 });
    });
  });
}
