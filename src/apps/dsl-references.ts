import type { DslDocument } from './dsl.js';
import { DATASET_FIELDS } from './dataset-map.js';
import { appDatasetRefs } from './app-datasets.js';
import { isObject } from '../infra/objects.js';

/**
 * What an exported DSL points at outside itself, for the console's import to offer mappings
 * (the same ids `app import --dataset OLD=NEW` and `--tool OLD=APP_ID` take): the dataset ids of
 * its nodes (or of a basic app's `model_config`), and the provider ids of its workflow tools.
 */
export function dslReferences(doc: DslDocument): { datasetIds: string[]; workflowToolIds: string[] } {
  const datasets = new Set<string>();
  const tools = new Set<string>();
  if (!doc.workflow) {
    for (const r of appDatasetRefs(doc)) datasets.add(r.id);
    return { datasetIds: [...datasets], workflowToolIds: [] };
  }
  for (const n of doc.workflow.graph.nodes) {
    const d = n.data;
    for (const f of DATASET_FIELDS) {
      const v = d[f];
      if (Array.isArray(v)) for (const id of v) if (typeof id === 'string' && id !== '') datasets.add(id);
    }
    if (d.type === 'tool' && d.provider_type === 'workflow' && typeof d.provider_id === 'string') tools.add(d.provider_id);
    const params = d.type === 'agent' && isObject(d.agent_parameters) ? d.agent_parameters : undefined;
    const list = params && isObject(params.tools) && Array.isArray(params.tools.value) ? (params.tools.value as unknown[]) : [];
    for (const t of list) if (isObject(t) && t.type === 'workflow' && typeof t.provider_name === 'string') tools.add(t.provider_name);
  }
  return { datasetIds: [...datasets], workflowToolIds: [...tools] };
}
