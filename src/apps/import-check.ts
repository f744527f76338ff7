import type { DslDocument, DslNode } from './dsl.js';
import { DATASET_FIELDS } from './dataset-map.js';
import { appDatasetRefs } from './app-datasets.js';
import { NODE_HANDLERS } from '../engine/nodes/registry.js';
import { isNodeType, type GraphNode, type ImportCheckContext, type ImportWarning } from '../engine/types.js';
import type { ModelProviders } from '../llm/model-provider.js';
import type { ToolRuntime } from '../tools/tool.js';
import { toolNodeWarnings } from '../tools/tool-warnings.js';
import { agentChatToolRef, enabledAgentTools } from '../messages/agent-mode.js';
import { isObject } from '../infra/objects.js';
import { DEFAULT_DSL_VERSION, isNewerDslVersion, NEWEST_KNOWN_DSL_VERSION, parseDslVersion } from './dsl-upgrade.js';
import type { ApiBasedExtension } from '../moderation/moderation-config.js';
import { moderationWarnings } from '../moderation/moderation-warnings.js';

/** What the import check asks of the rest of the server. */
export interface ImportCheckDeps {
  readonly providers: () => ModelProviders;
  /** Null when the rerank provider can be called; else why not (unset: rerank models are not checked). */
  readonly rerankProblem?: (provider: string) => string | null;
  /** The ids among `ids` that name no dataset of the workspace. */
  missingDatasets(ids: readonly string[], workspaceId: string): Promise<string[]>;
  /** The top-level Python modules among `names` that the code node Python cannot import; throws when Python cannot run. */
  missingPythonModules(names: readonly string[]): Promise<string[]>;
  /** The setting that names the Python code nodes run with (`CODE_PYTHON_COMMAND`, or `CODE_PYTHON_PACKAGES_DIR` in the sandbox). */
  readonly pythonSetting: string;
  /** What to do about a missing module (the code executor's advice). */
  readonly missingModuleAdvice: (module: string) => string;
  /** The tools tool and agent nodes run with; unset: their tools are not checked. */
  readonly tools?: () => ToolRuntime;
  /** `api_based_extensions` of dovetail.yaml (moderation and external data tools name them); unset: none. */
  readonly apiBasedExtensions?: readonly ApiBasedExtension[];
}


/** `NAME` of a provider setting: `langgenius/volcengine_maas/volcengine_maas` → `VOLCENGINE_MAAS`. */
function settingName(provider: string): string {
  const plugin = /^[^/]+\/([^/]+)\/[^/]+$/.exec(provider);
  return (plugin ? plugin[1]! : provider).toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/**
 * The setting a provider error names (`set DEEPSEEK_API_KEY`); for a provider Dovetail does not
 * know, the `dovetail.yaml` mapping that adds it (`providers.yi`): no environment variable would
 * make such a provider work until it is added there.
 */
function providerSetting(provider: string, message: string): string {
  const named = /\b([A-Z][A-Z0-9_]*_(?:API_KEY|BASE_URL|ENDPOINT|REGION|ACCESS_KEY_ID))\b/.exec(message);
  if (named) return named[1]!;
  const added = /\b(providers\.[a-z0-9][a-z0-9_.-]*?)\.protocol\b/.exec(message);
  return added ? added[1]! : `providers.${settingName(provider).toLowerCase()}`;
}

function datasetIdsOf(data: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const f of DATASET_FIELDS) {
    const v = data[f];
    if (Array.isArray(v)) for (const id of v) if (typeof id === 'string' && id !== '') out.push(id);
  }
  return out;
}

/**
 * Model providers a node calls: `model`, the metadata model when filtering is automatic, and an
 * agent node's model (`agent_parameters.model.value`).
 */
function providersOf(data: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  const add = (m: unknown) => {
    if (isObject(m) && typeof m.provider === 'string') out.push(m.provider);
  };
  add(data.model);
  if (data.metadata_filtering_mode === 'automatic') add(data.metadata_model_config);
  if (data.type === 'agent' && isObject(data.agent_parameters)) {
    const m = data.agent_parameters.model;
    add(isObject(m) && 'value' in m ? m.value : m);
  }
  return out;
}

/**
 * Top-level modules a Python program imports (`import a.b, c as d`, `from e.f import g`), in
 * order, each once; relative imports are skipped. One pass over the lines: linear in the code.
 */
export function pythonImports(code: string): string[] {
  const seen = new Set<string>();
  for (const raw of code.split('\n')) {
    const line = raw.trim();
    let names: string[] = [];
    if (line.startsWith('import ')) names = line.slice(7).split(',').map((p) => p.trim().split(/\s+/)[0] ?? '');
    else if (line.startsWith('from ')) names = [line.slice(5).trim().split(/\s+/)[0] ?? ''];
    for (const n of names) {
      const top = n.split('.')[0]!;
      if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(top)) seen.add(top);
    }
  }
  return [...seen];
}

/** Null when the provider can be called, else the registry's message (which names the setting). */
function problemOf(deps: Pick<ImportCheckDeps, 'providers'>, provider: string): string | null {
  try {
    deps.providers().get(provider);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A model provider an app names, and whether this server can call it. */
export interface AppProviderStatus {
  readonly provider: string;
  /** Null when it can be called; else why not (naming the setting). */
  readonly problem: string | null;
  /** The setting that makes it available (as the import warnings name it); null when configured. */
  readonly setting: string | null;
}

/**
 * The model providers an app's DSL names (the model of a completion / chat / agent app, or every
 * LLM-using node of a workflow / chatflow), each once, with what the import warnings know of it.
 */
export function appModelProviders(doc: DslDocument, deps: Pick<ImportCheckDeps, 'providers'>): AppProviderStatus[] {
  const names: string[] = [];
  if (!doc.workflow) {
    const model = isObject(doc.model_config) ? doc.model_config.model : undefined;
    if (isObject(model) && typeof model.provider === 'string') names.push(model.provider);
  } else for (const node of doc.workflow.graph.nodes) names.push(...providersOf(node.data));
  return [...new Set(names)].map((provider) => {
    const problem = problemOf(deps, provider);
    return { provider, problem, setting: problem ? providerSetting(provider, problem) : null };
  });
}

function warning(node: DslNode, part: string, setting: string, message: string): ImportWarning {
  return { node_id: node.id, node_type: node.data.type, part, setting, message: `node ${node.id} (${node.data.type}): ${message}` };
}

/**
 * Everything an imported workflow / chatflow names that this server cannot serve yet, in node
 * order: model providers without credentials, datasets that do not exist in the workspace, Python
 * modules code nodes import that are not installed, and what each node type's own
 * `importWarnings` reports. The graph itself was validated at import; this never throws for it.
 */
/** A DSL newer than the newest Dovetail knows (Dify asks the user to confirm such an import). */
function versionWarnings(doc: DslDocument): ImportWarning[] {
  // an app stored before versions were checked may have a malformed one: the import refuses those, `app check` does not
  const version = typeof doc.version === 'string' && parseDslVersion(doc.version) ? doc.version : DEFAULT_DSL_VERSION;
  if (!isNewerDslVersion(version, NEWEST_KNOWN_DSL_VERSION)) return [];
  return [
    {
      node_id: 'version',
      node_type: 'dsl',
      part: `DSL version ${version}`,
      setting: null,
      message: `version ${version} is newer than the newest DSL version Dovetail knows (${NEWEST_KNOWN_DSL_VERSION}): what was added to the DSL since is not read; check the app before relying on it`,
    },
  ];
}

/** The app's code nodes in one language (with their code). */
export function codeNodes(doc: DslDocument, language: 'python3' | 'javascript'): DslNode[] {
  return (doc.workflow?.graph.nodes ?? []).filter((n) => n.data.type === 'code' && n.data.code_language === language && typeof n.data.code === 'string');
}

export async function importWarnings(doc: DslDocument, workspaceId: string, deps: ImportCheckDeps): Promise<ImportWarning[]> {
  const out: ImportWarning[] = [...versionWarnings(doc), ...moderationWarnings(doc, deps.apiBasedExtensions ?? [], () => problemOf(deps, 'openai'))];
  if (!doc.workflow) {
    // completion and chat apps: the one model of `model_config`
    const model = isObject(doc.model_config) ? doc.model_config.model : undefined;
    const provider = isObject(model) && typeof model.provider === 'string' ? model.provider : undefined;
    const problem = provider === undefined ? null : problemOf(deps, provider);
    if (provider !== undefined && problem) {
      out.push({ node_id: 'model_config', node_type: doc.app.mode, part: `model provider "${provider}"`, setting: providerSetting(provider, problem), message: `model_config (${doc.app.mode}): ${problem}` });
    }
    const refs = appDatasetRefs(doc);
    const missing = new Set(refs.length > 0 ? await deps.missingDatasets([...new Set(refs.map((r) => r.id))], workspaceId) : []);
    for (const r of refs) {
      if (missing.has(r.id)) {
        out.push({ node_id: r.where, node_type: doc.app.mode, part: `dataset ${r.id}`, setting: `--dataset ${r.id}=NEW_ID`, message: `${r.where} (${doc.app.mode}): dataset ${r.id} does not exist here: map it with app import or app update --dataset ${r.id}=NEW_ID (a dataset of this server; dataset list shows them) or create it` });
      }
    }
    if (doc.app.mode === 'agent-chat' && deps.tools) {
      const tools = deps.tools();
      for (const { index, entry } of enabledAgentTools({ dsl: doc })) {
        const ref = agentChatToolRef(entry);
        const r = await tools.check(ref);
        const where = `model_config.agent_mode.tools[${index}]`;
        if ('error' in r) out.push({ node_id: where, node_type: 'agent-chat', part: `tool ${ref.providerId}/${ref.toolName}`, setting: r.setting ?? null, message: `${where} (agent-chat): ${r.error}` });
      }
    }
    return out;
  }
  const nodes = doc.workflow.graph.nodes;
  const ctx: ImportCheckContext = { providerProblem: (provider) => problemOf(deps, provider), ...(deps.rerankProblem ? { rerankProblem: deps.rerankProblem } : {}) };
  const datasetIds = [...new Set(nodes.flatMap((n) => datasetIdsOf(n.data)))];
  const missingDatasets = new Set(datasetIds.length > 0 ? await deps.missingDatasets(datasetIds, workspaceId) : []);
  const pythonNodes = codeNodes(doc, 'python3');
  const modules = [...new Set(pythonNodes.flatMap((n) => pythonImports(n.data.code as string)))];
  // one check for the whole app, bounded by the code executor's CODE_EXECUTION_TIMEOUT and CODE_MAX_OUTPUT_BYTES
  let missingModules = new Set<string>();
  let pythonProblem: string | undefined;
  if (modules.length > 0) {
    try {
      missingModules = new Set(await deps.missingPythonModules(modules));
    } catch (err) {
      pythonProblem = (err as Error).message;
    }
  }
  for (const node of nodes) {
    const d = node.data;
    for (const provider of providersOf(d)) {
      const problem = ctx.providerProblem(provider);
      const part = provider.trim() === '' ? 'model provider "" (the default provider)' : `model provider "${provider}"`;
      if (problem) out.push(warning(node, part, providerSetting(provider, problem), problem));
    }
    for (const id of datasetIdsOf(d)) {
      if (missingDatasets.has(id)) {
        out.push(warning(node, `dataset ${id}`, `--dataset ${id}=NEW_ID`, `dataset ${id} does not exist here: map it with app import or app update --dataset ${id}=NEW_ID (a dataset of this server; dataset list shows them) or create it`));
      }
    }
    if (pythonNodes.includes(node)) {
      if (pythonProblem) out.push(warning(node, 'python3', deps.pythonSetting, `python3 cannot run here (${pythonProblem}): set ${deps.pythonSetting}`));
      else {
        for (const m of pythonImports(d.code as string)) {
          if (missingModules.has(m)) {
            out.push(warning(node, `python module ${m}`, deps.pythonSetting, deps.missingModuleAdvice(m)));
          }
        }
      }
    }
    if ((d.type === 'tool' || d.type === 'agent') && deps.tools) {
      for (const w of await toolNodeWarnings({ id: node.id, type: d.type, data: d }, deps.tools())) out.push({ ...w, message: `node ${node.id} (${d.type}): ${w.message}` });
    }
    const type = d.type;
    const hook = isNodeType(type) ? NODE_HANDLERS[type].importWarnings : undefined;
    if (hook) {
      const parentId = typeof node.parentId === 'string' && node.parentId ? node.parentId : undefined;
      const g: GraphNode = { id: node.id, type: type as GraphNode['type'], title: typeof d.title === 'string' ? d.title : node.id, data: d, ...(parentId ? { parentId } : {}) };
      out.push(...(await hook(g, ctx)));
    }
  }
  return out;
}
