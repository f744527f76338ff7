import { stringify } from 'yaml';

export interface NodeSpec {
  id: string;
  type: string;
  [k: string]: unknown;
}

/** Builds a workflow / chatflow DSL document from compact node and edge lists. */
export function workflowDsl(
  nodes: NodeSpec[],
  edges: [source: string, target: string, handle?: string][],
  opts: { mode?: 'workflow' | 'advanced-chat'; name?: string } = {},
): string {
  return stringify({
    app: { name: opts.name ?? 'test workflow', mode: opts.mode ?? 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      graph: {
        nodes: nodes.map(({ id, type, parentId, ...data }) => ({ id, ...(parentId ? { parentId } : {}), data: { type, title: (data.title as string) ?? id, ...data } })),
        edges: edges.map(([source, target, handle]) => ({ source, target, sourceHandle: handle ?? 'source' })),
      },
    },
  });
}

export const startNode = (variables: { variable: string; type?: string; required?: boolean }[] = []): NodeSpec => ({
  id: 'start',
  type: 'start',
  variables: variables.map((v) => ({ label: v.variable, type: 'text-input', required: true, ...v })),
});

export const templateNode = (id: string, template: string, vars: Record<string, string[]> = {}, extra: Record<string, unknown> = {}): NodeSpec => ({
  id,
  type: 'template-transform',
  template,
  variables: Object.entries(vars).map(([variable, value_selector]) => ({ variable, value_selector })),
  ...extra,
});

export const endNode = (outputs: Record<string, string[]>, id = 'end'): NodeSpec => ({
  id,
  type: 'end',
  outputs: Object.entries(outputs).map(([variable, value_selector]) => ({ variable, value_selector })),
});

export const llmNode = (id: string, user: string, extra: Record<string, unknown> = {}): NodeSpec => ({
  id,
  type: 'llm',
  model: { provider: 'openai', name: 'gpt-test', mode: 'chat', completion_params: {} },
  prompt_template: [{ role: 'user', text: user }],
  ...extra,
});
