import type { MessageStore } from '../messages/message-store.js';
import { withCaller } from '../tools/tool.js';
import type { App } from '../apps/app-service.js';
import { newId } from '../infra/ids.js';
import type { HumanInputGateway } from '../forms/human-input-port.js';
import { compileGraph } from '../engine/graph.js';
import type { EnginePorts, Graph } from '../engine/types.js';
import type { RunServiceDeps } from './run-config.js';
import type { RunMeta } from './run-types.js';
import { DbConversationMemory } from './conversation-memory.js';

/** The engine's ports of a run (models, tools, code, limits…) and the compiled graphs of apps. */
export class RunPorts {
  readonly #deps: RunServiceDeps;
  readonly #humanInput: () => HumanInputGateway | undefined;
  readonly #memory: DbConversationMemory;
  readonly #graphs = new WeakMap<App, Graph>();

  constructor(deps: RunServiceDeps, humanInput: () => HumanInputGateway | undefined, messages: MessageStore) {
    this.#deps = deps;
    this.#humanInput = humanInput;
    this.#memory = new DbConversationMemory(messages);
  }

  graph(app: App): Graph {
    let g = this.#graphs.get(app);
    if (!g) {
      g = compileGraph(app.dsl);
      this.#graphs.set(app, g);
    }
    return g;
  }

  of(meta: RunMeta, workspaceId: string): EnginePorts {
    const d = this.#deps;
    const config = d.config;
    const caller = { workspaceId, appId: meta.appId, runId: meta.id, endUserId: meta.endUserId, user: meta.user, callDepth: meta.callDepth ?? 0 };
    return {
      providers: d.providers(),
      humanInput: this.#humanInput(),
      memory: this.#memory,
      knowledge: d.knowledge?.(),
      limits: {
        loopMaxCount: config.loopMaxCount,
        iterationMaxItems: config.iterationMaxItems,
        iterationMaxParallel: config.iterationMaxParallel,
        code: config.codeOutputs,
        agentMaxIterations: config.agentMaxIterations,
      },
      code: d.code,
      templates: d.templates,
      http: d.http,
      ...(d.priceOf ? { priceOf: d.priceOf } : {}),
      files: d.files,
      tools: d.tools && withCaller(d.tools, caller),
      now: () => d.clock.now(),
      newId,
      sleep: (ms, signal) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        }),
    };
  }
}
