import { describe, expect, it } from 'vitest';
import { toolNodeWarnings } from '../../src/tools/tool-warnings.js';
import { builtinToolRegistry } from '../../src/tools/tool-registry.js';
import { readToolsConfig } from '../../src/tools/tool-config.js';

const registry = (env: Record<string, string> = {}) => builtinToolRegistry(readToolsConfig(env, {}), []);

describe('toolNodeWarnings (import warnings for tool and agent nodes)', () => {
  it('a built-in tool with its settings gives none; a missing credential names the setting', async () => {
    expect(await toolNodeWarnings({ id: 'n', type: 'tool', data: { provider_id: 'time', provider_type: 'builtin', tool_name: 'current_time' } }, registry())).toEqual([]);
    const w = await toolNodeWarnings({ id: 'n', type: 'tool', data: { provider_id: 'tavily', provider_type: 'builtin', tool_name: 'tavily_search' } }, registry());
    expect(w).toEqual([{ node_id: 'n', node_type: 'tool', part: 'tool tavily/tavily_search', setting: 'TAVILY_API_KEY', message: 'tool "tavily_search" of provider "tavily" is not configured: set TAVILY_API_KEY (or tools.tavily.api_key in dovetail.yaml)' }]);
    expect(await toolNodeWarnings({ id: 'n', type: 'tool', data: { provider_id: 'tavily', provider_type: 'builtin', tool_name: 'tavily_search' } }, registry({ TAVILY_API_KEY: 'k' }))).toEqual([]);
  });

  it('a marketplace plugin warns without a setting', async () => {
    const [w] = await toolNodeWarnings({ id: 'p', type: 'tool', data: { provider_id: 'langgenius/perplexity/perplexity', provider_type: 'builtin', tool_name: 'perplexity' } }, registry());
    expect(w).toMatchObject({ node_id: 'p', part: 'tool langgenius/perplexity/perplexity/perplexity', setting: null });
    expect(w!.message).toMatch(/the marketplace plugin "langgenius\/perplexity" is not available here/);
  });

  it('agent nodes: an unknown strategy and each unavailable tool', async () => {
    const w = await toolNodeWarnings(
      {
        id: 'a',
        type: 'agent',
        data: {
          agent_strategy_provider_name: 'someone/cot/cot',
          agent_strategy_name: 'tree_of_thought',
          agent_parameters: { tools: { type: 'array[tools]', value: [{ enabled: true, provider_name: 'time', tool_name: 'current_time', type: 'builtin' }, { enabled: true, provider_name: 'langgenius/google/google', tool_name: 'google_search', type: 'builtin' }] } },
        },
      },
      registry(),
    );
    expect(w.map((x) => x.part)).toEqual(['agent strategy someone/cot/cot/tree_of_thought', 'tool langgenius/google/google/google_search']);
  });
});
