import { AnthropicProvider } from '../../src/llm/anthropic-provider.js';
import { BedrockProvider } from '../../src/llm/bedrock-provider.js';
import { OpenAIProvider } from '../../src/llm/openai-provider.js';
import { scriptedAnthropic, scriptedBedrock, scriptedOpenAI } from '../helpers/scripted-upstreams.js';
import { describeModelProviderContract } from './model-provider.contract.js';

/**
 * The ModelProvider contract for each provider in src/llm, against a local fake of its wire
 * protocol. The mock provider has no upstream (nothing to stream from, refuse or abort), so it is
 * not here; a new provider is a fake in scripted-upstreams.ts and a line below.
 */
const NOWHERE = 'http://127.0.0.1:1';

describeModelProviderContract('OpenAI-compatible', async () => {
  const upstream = await scriptedOpenAI();
  const at = (url: string) => new OpenAIProvider({ name: 'openai', apiKey: 'k', baseUrl: `${url}/v1` });
  return { upstream, provider: at(upstream.url), unreachable: () => at(NOWHERE), close: () => upstream.close() };
});

describeModelProviderContract('Azure OpenAI', async () => {
  const upstream = await scriptedOpenAI();
  const at = (url: string) => new OpenAIProvider({ name: 'azure_openai', apiKey: 'k', baseUrl: url, strictParams: true, azure: { apiVersion: '2024-10-21' } });
  return { upstream, provider: at(upstream.url), unreachable: () => at(NOWHERE), close: () => upstream.close() };
});

describeModelProviderContract('Anthropic', async () => {
  const upstream = await scriptedAnthropic();
  const at = (url: string) => new AnthropicProvider({ apiKey: 'sk-ant-test', baseUrl: url });
  return { upstream, provider: at(upstream.url), unreachable: () => at(NOWHERE), close: () => upstream.close() };
});

describeModelProviderContract('Bedrock', async () => {
  const upstream = await scriptedBedrock();
  const at = (url: string) => new BedrockProvider({ region: 'us-east-1', endpoint: url, credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
  return { upstream, provider: at(upstream.url), unreachable: () => at(NOWHERE), close: () => upstream.close() };
});
