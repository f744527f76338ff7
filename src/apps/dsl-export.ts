import { stringify } from 'yaml';
import type { DslDocument } from './dsl.js';

/** The DSL version written when the imported document named none (Dify's current export version). */
export const EXPORT_DSL_VERSION = '0.5.0';

/**
 * An app's DSL as Dify's export writes it: `kind: app`, `version`, `dependencies` and the stored
 * document, keys sorted (PyYAML's `yaml.dump` default), and the values of secret environment
 * variables emptied unless `includeSecret` (Dify's `include_secret=false` default).
 */
export function exportDsl(doc: DslDocument, opts: { includeSecret?: boolean } = {}): string {
  const out: Record<string, unknown> = { ...doc, kind: 'app', version: doc.version ?? EXPORT_DSL_VERSION, dependencies: (doc as { dependencies?: unknown }).dependencies ?? [] };
  if (doc.workflow?.environment_variables && !opts.includeSecret) {
    out.workflow = {
      ...doc.workflow,
      environment_variables: doc.workflow.environment_variables.map((v) => (v.value_type === 'secret' ? { ...v, value: '' } : v)),
    };
  }
  return stringify(out, { sortMapEntries: true, lineWidth: 0 });
}
