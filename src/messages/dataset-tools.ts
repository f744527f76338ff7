import type { App } from '../apps/app-service.js';
import type { AppDatasetConfig } from '../apps/app-datasets.js';
import { mergeResources, type RetrieverResource } from '../engine/retriever-resources.js';
import type { DatasetSummary } from '../engine/types.js';
import { ToolError, type Tool, type ToolRef, type ToolRuntime } from '../tools/tool.js';
import type { AgentMode } from './agent-mode.js';
import { datasetDescription, resourceOfHit, type AppDatasetRetrieval } from './dataset-retrieval.js';

/** The provider type of dataset retriever tools in an agent's tool references (no DSL writes it). */
const DATASET_PROVIDER = 'dataset';

/** Dify's `DatasetRetrieverTool` name for a dataset: `dataset_` and its id with `_` for `-`. */
export function datasetToolName(id: string): string {
  return `dataset_${id.replaceAll('-', '_')}`;
}

/**
 * An agent-chat app's datasets as Dify's `DatasetRetrieverTool`s: one tool per dataset taking a
 * `query`, answering the matching chunks' text (one a line, best first) and adding their citations
 * to `cited` (merged as Dify merges an answer's citations). `tools` serves them besides the
 * runtime's own tools; `specs` go at the end of the agent's tool list.
 */
export function datasetTools(
  retrieval: AppDatasetRetrieval,
  app: App,
  cfg: AppDatasetConfig,
  summaries: readonly DatasetSummary[],
  cited: { resources: RetrieverResource[] },
): { specs: AgentMode['tools']; tools: (base: ToolRuntime | undefined) => ToolRuntime } {
  const byName = new Map<string, Tool>();
  const specs = summaries.map((d) => {
    const name = datasetToolName(d.id);
    const where = cfg.datasets.find((r) => r.id === d.id)?.where ?? 'model_config.agent_mode.tools';
    const tool: Tool = {
      name,
      description: datasetDescription(d),
      parameters: [{ name: 'query', type: 'string', form: 'llm', required: true, llmDescription: 'Query for the dataset to be used to retrieve the dataset.' }],
      async invoke(params, ctx) {
        const query = params.query;
        if (typeof query !== 'string' || query.trim() === '') throw new ToolError('query is required', 'ToolParameterValidationError');
        const hits = await retrieval.search(app, [d.id], query, { appId: app.id, topK: cfg.topK, ...(cfg.scoreThreshold !== null ? { scoreThreshold: cfg.scoreThreshold } : {}) }, ctx.signal);
        const sorted = [...hits].sort((a, b) => b.score - a.score);
        cited.resources = mergeResources(cited.resources, sorted.map(resourceOfHit));
        return [{ type: 'text', text: sorted.map((h) => h.content).join('\n') }];
      },
    };
    byName.set(name, tool);
    const ref: ToolRef = { providerType: DATASET_PROVIDER, providerId: d.id, toolName: name };
    return { ref, description: '', fixed: {}, auto: undefined, where: where.replace(/\.dataset\.id$/, ''), label: d.name };
  });
  const tools = (base: ToolRuntime | undefined): ToolRuntime => {
    const unknown = (ref: ToolRef) => ({ error: `tool "${ref.toolName}" cannot be found`, errorType: 'ToolNotFoundError' });
    return {
      resolve: (ref) => (ref.providerType === DATASET_PROVIDER ? Promise.resolve({ tool: byName.get(ref.toolName) }) : base ? base.resolve(ref) : Promise.resolve(unknown(ref))),
      check: (ref) => (ref.providerType === DATASET_PROVIDER ? Promise.resolve({ tool: byName.get(ref.toolName) }) : base ? base.check(ref) : Promise.resolve(unknown(ref))),
      invoke: async (tool, params, ctx) => {
        if (byName.get(tool.name) === tool) return (await tool.invoke(params, ctx)).filter((m) => m.type === 'text');
        if (!base) throw new ToolError(`tool "${tool.name}" cannot be found`, 'ToolNotFoundError');
        return base.invoke(tool, params, ctx);
      },
    };
  };
  return { specs, tools };
}
