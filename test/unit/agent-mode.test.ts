import { describe, expect, it } from 'vitest';
import { parseDsl } from '../../src/apps/dsl.js';
import { agentModeOf } from '../../src/messages/agent-mode.js';

const dsl = (agentMode: string) => `app:
  mode: agent-chat
  name: A
model_config:
  model: { provider: openai, name: gpt-4o-mini, mode: chat }
${agentMode}`;

describe('agent-chat DSL: model_config.agent_mode', () => {
  it('reads strategy, max_iteration and the enabled tools with their fixed parameters', () => {
    const doc = parseDsl(
      dsl(`  agent_mode:
    enabled: true
    strategy: react
    max_iteration: 7
    tools:
      - { enabled: true, provider_id: time, provider_type: builtin, tool_name: current_time, tool_label: Clock, tool_parameters: { format: '%Y', timezone: '' } }
      - { enabled: false, provider_id: math, provider_type: builtin, tool_name: eval_expression, tool_parameters: {} }
      - { provider_id: langgenius/tavily/tavily, provider_type: builtin, tool_name: tavily_search }
`),
    );
    const m = agentModeOf({ dsl: doc });
    expect(m.strategy).toBe('ReAct');
    expect(m.maxIteration).toBe(7);
    expect(m.tools).toEqual([
      { ref: { providerType: 'builtin', providerId: 'time', toolName: 'current_time' }, description: '', fixed: { format: '%Y' }, auto: undefined, where: 'model_config.agent_mode.tools[0]', label: 'Clock' },
      { ref: { providerType: 'builtin', providerId: 'langgenius/tavily/tavily', toolName: 'tavily_search' }, description: '', fixed: {}, auto: undefined, where: 'model_config.agent_mode.tools[2]', label: 'tavily_search' },
    ]);
  });

  it('defaults: function calling, 5 rounds, no tools; function_call and router are function calling', () => {
    expect(agentModeOf({ dsl: parseDsl(dsl('')) })).toEqual({ strategy: 'function_calling', maxIteration: 5, tools: [] });
    for (const s of ['function_call', 'router']) expect(agentModeOf({ dsl: parseDsl(dsl(`  agent_mode: { strategy: ${s} }\n`)) }).strategy).toBe('function_calling');
    expect(agentModeOf({ dsl: parseDsl(dsl('  agent_mode: { strategy: react_router }\n')) }).strategy).toBe('ReAct');
  });

  it('refuses a malformed agent_mode naming the field', () => {
    expect(() => parseDsl(dsl('  agent_mode: [1]\n'))).toThrow('model_config.agent_mode must be a mapping');
    expect(() => parseDsl(dsl('  agent_mode: { max_iteration: 0 }\n'))).toThrow('model_config.agent_mode.max_iteration must be a whole number of at least 1, got 0');
    expect(() => parseDsl(dsl('  agent_mode: { tools: { a: 1 } }\n'))).toThrow('model_config.agent_mode.tools must be a list');
    expect(() => parseDsl(dsl('  agent_mode: { tools: [ { tool_name: x, tool_parameters: [1] } ] }\n'))).toThrow('model_config.agent_mode.tools[0].tool_parameters must be a mapping');
    expect(() => parseDsl('app:\n  mode: agent-chat\n  name: A\n')).toThrow('model_config is required for agent-chat apps');
  });
});
