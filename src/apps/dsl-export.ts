import { yamlLib } from '../infra/yaml.js';
import type { DslDocument } from './dsl.js';

/** The DSL version written when the imported document named none (Dify's current export version). */
export const EXPORT_DSL_VERSION = '0.5.0';

/**
 * An app's DSL as Dify's export writes it: `kind: app`, `version`, `dependencies` and the stored
 * document, keys sorted (PyYAML's `yaml.dump` default), and the values of secret environment
 * variables emptied unless `includeSecret` (Dify's `include_secret=false` default), webhook
 * triggers' `webhook_url` / `webhook_debug_url` emptied.
 */
export function exportDsl(doc: DslDocument, opts: { includeSecret?: boolean } = {}): string {
  const out: Record<string, unknown> = { ...doc, kind: 'app', version: doc.version ?? EXPORT_DSL_VERSION, dependencies: (doc as { dependencies?: unknown }).dependencies ?? [] };
  if (doc.workflow?.environment_variables && !opts.includeSecret) {
    out.workflow = {
      ...doc.workflow,
      environment_variables: doc.workflow.environment_variables.map((v) => (v.value_type === 'secret' ? { ...v, value: '' } : v)),
    };
  }
  // a webhook's URL belongs to this server (made at import): exports clear it, as Dify's do
  const wf = (out.workflow ?? doc.workflow) as DslDocument['workflow'];
  if (wf?.graph.nodes.some((n) => n.data.type === 'trigger-webhook')) {
    const nodes = wf.graph.nodes.map((n) => (n.data.type === 'trigger-webhook' ? { ...n, data: { ...n.data, webhook_url: '', webhook_debug_url: '' } } : n));
    out.workflow = { ...wf, graph: { ...wf.graph, nodes } };
  }
  return yamlLib().stringify(out, { sortMapEntries: true, lineWidth: 0 });
}
