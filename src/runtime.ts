import path from 'node:path';
import type { Config } from './config.js';
import { openStore, type Store } from './store/db.js';
import { AppService } from './apps/app-service.js';
import { KeyService } from './apps/key-service.js';
import { EndUserService } from './apps/end-users.js';
import { DiskBlobs } from './files/blobs/disk-blobs.js';
import type { Blobs } from './files/blobs/blobs.js';
import { UploadService } from './files/upload-service.js';
import { systemClock, type Clock } from './infra/clock.js';
import { createLogger, type Logger } from './infra/logger.js';
import type { Bus } from './infra/bus/bus.js';
import { MemoryBus } from './infra/bus/memory-bus.js';
import { RedisBus } from './infra/bus/redis-bus.js';
import type { ModelProviders } from './llm/model-provider.js';
import type { HumanInputGateway } from './forms/human-input-port.js';
import { RunService } from './runs/run-service.js';
import { ChatflowService } from './runs/chatflow-service.js';
import { validateGraph, GraphError } from './engine/graph.js';
import { DslError } from './apps/errors.js';

/** Everything the HTTP layer and the CLI use, built once from config. */
export interface Runtime {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly store: Store;
  readonly blobs: Blobs;
  readonly apps: AppService;
  readonly keys: KeyService;
  readonly endUsers: EndUserService;
  readonly uploads: UploadService;
  /** Run events doorbell and stop signals (in-process, or Redis when `REDIS_URL` is set). */
  readonly bus: Bus;
  /** Workflow / chatflow runs; also the `RunResumer` the Human Input form store calls. */
  readonly runs: RunService;
  /** Chatflow messages and conversations. */
  readonly chatflow: ChatflowService;
  /**
   * The Human Input gateway the `human-input` node asks (src/forms plugs itself in here, or passes
   * `humanInput` to `createRuntime`). Unset: runs reaching a human-input node fail with a clear error.
   */
  humanInput: HumanInputGateway | undefined;
  /** Stops background work and closes connections. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Model providers for `llm` nodes (until the provider registry is built from config). */
  readonly providers?: ModelProviders;
  /** The Human Input gateway (src/forms); also settable later with `runtime.runs.setHumanInputGateway`. */
  readonly humanInput?: HumanInputGateway;
  /** Overrides the bus chosen from config (tests). */
  readonly bus?: Bus;
}

/** Composition root: picks implementations from config and wires the services. */
export async function createRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  const store = await openStore(config);
  const blobs = new DiskBlobs(path.join(config.dataDir, 'files'));
  const apps = new AppService(store.db, clock);
  const keys = new KeyService(store.db, clock);
  const endUsers = new EndUserService(store.db, clock);
  const uploads = new UploadService(store.db, blobs, config.upload, clock);
  const closers: (() => Promise<void>)[] = [];
  apps.addGraphValidator((doc) => {
    try {
      validateGraph(doc);
    } catch (err) {
      if (err instanceof GraphError) throw new DslError(err.message);
      throw err;
    }
  });
  const bus: Bus = opts.bus ?? (config.redisUrl ? new RedisBus(config.redisUrl) : new MemoryBus());
  closers.push(() => bus.close());
  const runs = new RunService({
    db: store.db,
    bus,
    clock,
    logger,
    config: config.runs,
    providers: () => opts.providers,
    findApp: (id) => apps.find(id),
    humanInput: opts.humanInput,
  });
  await runs.startBackground();
  closers.push(() => runs.close());
  const chatflow = new ChatflowService(store.db, clock, runs);
  return {
    config,
    logger,
    clock,
    store,
    blobs,
    apps,
    keys,
    endUsers,
    uploads,
    bus,
    runs,
    chatflow,
    get humanInput() {
      return runs.humanInput;
    },
    set humanInput(gateway: HumanInputGateway | undefined) {
      runs.setHumanInputGateway(gateway);
    },
    async close() {
      for (const c of closers.reverse()) await c();
      await store.destroy();
    },
  };
}
