import type { DslDocument } from './dsl.js';
import { DslError } from './errors.js';
import { mapAppDatasets } from './app-datasets.js';

// `app import | update --dataset OLD=NEW`: apart from the import check (which loads the engine's
// node handlers), so that reading and storing apps does not load them.

/** Node data fields that hold dataset ids (`knowledge-retrieval`, `knowledge-retrieval-v2`). */
export const DATASET_FIELDS = ['dataset_ids', 'control_space_ids'] as const;

/**
 * Parses the `OLD=NEW` pairs of a CLI mapping option (`--dataset`, `--tool`); throws DslError
 * naming the option and a malformed pair (`expected` says what each side is). Returns old → new.
 */
export function parseIdPairs(pairs: readonly string[], option: string, expected: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const p of pairs) {
    const m = /^([^=\s]+)=([^=\s]+)$/.exec(p);
    if (!m) throw new DslError(`${option} ${p}: expected ${expected}`);
    map.set(m[1]!, m[2]!);
  }
  return map;
}

/** `app import --dataset OLD=NEW` pairs: old dataset id → new dataset id. */
export function parseDatasetMap(pairs: readonly string[]): Map<string, string> {
  return parseIdPairs(pairs, '--dataset', 'OLD_ID=NEW_ID');
}

/**
 * A copy of the DSL with dataset ids replaced per `map` in every node's dataset fields (a
 * model-config app's: `model_config.dataset_configs` and `agent_mode.tools`). Throws
 * DslError when an old id appears in no node (a typo would otherwise pass silently).
 */
export function mapDatasets(doc: DslDocument, map: ReadonlyMap<string, string>): DslDocument {
  if (map.size === 0) return doc;
  if (!doc.workflow) {
    // completion, chat and agent-chat apps: `dataset_configs` and `agent_mode.tools`
    const mapped = mapAppDatasets(doc, map);
    const unused = [...map.keys()].filter((k) => !mapped.used.has(k));
    if (unused.length > 0) throw new DslError(`--dataset: the app references no dataset ${unused.join(', ')}`);
    return mapped.doc;
  }
  const used = new Set<string>();
  const nodes = doc.workflow.graph.nodes.map((n) => {
    let data = n.data;
    for (const f of DATASET_FIELDS) {
      const v = data[f];
      if (!Array.isArray(v)) continue;
      data = {
        ...data,
        [f]: v.map((id) => {
          const next = typeof id === 'string' ? map.get(id) : undefined;
          if (next === undefined) return id;
          used.add(id as string);
          return next;
        }),
      };
    }
    return data === n.data ? n : { ...n, data };
  });
  const unused = [...map.keys()].filter((k) => !used.has(k));
  if (unused.length > 0) throw new DslError(`--dataset: the app references no dataset ${unused.join(', ')}`);
  return { ...doc, workflow: { ...doc.workflow, graph: { ...doc.workflow.graph, nodes } } };
}
