import { configFile, loadConfig, type Config } from '../config.js';
import { openStore, type Store } from '../store/db.js';
import { databaseExists, describeDatabase } from '../store/database-location.js';
import { AppService } from '../apps/app-service.js';
import { AppStore } from '../apps/app-store.js';
import { KeyService } from '../apps/key-service.js';
import { systemClock } from '../infra/clock.js';
import { SecretBox } from '../infra/secret-box.js';
import { ServerKeys } from '../infra/server-keys.js';
import type { Bus } from '../infra/bus/bus.js';
import type { Runtime } from '../runtime.js';
import type { Queue } from '../infra/queue/queue.js';
import { CliError } from './cli-error.js';

/** Options every command takes (set on the program, read through `optsWithGlobals`). */
export interface GlobalOptions {
  /** Create the database when there is none (otherwise the command refuses). */
  readonly init?: boolean;
}

/** What most commands need: the database and the app and key services (reading apps, not storing a DSL), without the server's runtime. */
export interface CliContext {
  readonly config: Config;
  readonly store: Store;
  readonly apps: AppService;
  readonly keys: KeyService;
  /** Seals and opens the secrets the database keeps (form tokens, secret variables). */
  readonly box: SecretBox;
  /** The bus every server instance listens on (Redis when `REDIS_URL` is set); undefined without one. */
  bus(): Promise<Bus | undefined>;
  /** The deployment's job queue (the runner `QUEUE` names), without a worker: for listing and retrying jobs. */
  queue(): Promise<Queue>;
}

/** Settings as the server reads them (env, then `dovetail.yaml`); one-shot commands log warnings only. */
function cliConfig(): Config {
  return loadConfig(process.env, { logLevel: process.env.LOG_LEVEL ?? 'warn' });
}

/**
 * Says on stderr which settings file and database the command uses, and refuses to create a new
 * database unless `--init` is given: a CLI run with another environment than the server's would
 * otherwise work on a fresh, empty database of its own.
 */
async function checkDatabase(config: Config, opts: GlobalOptions): Promise<void> {
  const where = describeDatabase(config);
  const file = configFile();
  process.stderr.write(`database: ${where}${file ? `; settings: ${file}` : ''}\n`);
  if (opts.init || (await databaseExists(config))) return;
  throw new CliError(
    `no Dovetail database at ${where}. Run the command with the server's DATABASE_URL / DOVETAIL_DATA_DIR (or in the directory of its dovetail.yaml), or pass --init to create a new database there`,
  );
}

/** Runs `fn` with the database and the app and key services, then closes them. */
export async function withCli<T>(opts: GlobalOptions, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const config = cliConfig();
  await checkDatabase(config, opts);
  const store = await openStore(config);
  let bus: Bus | undefined;
  let queue: Queue | undefined;
  const appStore = new AppStore(store.db);
  const box = new SecretBox(new ServerKeys({ db: store.db, clock: systemClock, secretKey: config.fileUrls.secretKey }));
  const apps = new AppService(appStore, systemClock, box);
  // Reading apps needs no graph check, and the engine's is the bulk of a command's start: commands
  // that store a DSL (app import, app update) use withRuntime, whose app service checks graphs.
  apps.addGraphValidator(() => {
    throw new Error('withCli does not check workflow graphs: store a DSL through withRuntime');
  });
  const ctx: CliContext = {
    config,
    store,
    apps,
    keys: new KeyService(appStore, systemClock),
    box,
    async bus() {
      if (!bus && config.redisUrl) {
        await (await import('../infra/redis-check.js')).checkRedis(config.redisUrl, config.redisConnectTimeoutSeconds);
        const { RedisBus } = await import('../infra/bus/redis-bus.js');
        bus = new RedisBus(config.redisUrl, config.redisKeyPrefix);
      }
      return bus;
    },
    async queue() {
      if (!queue) {
        if (config.redisUrl && config.queue.runner === 'bullmq') await (await import('../infra/redis-check.js')).checkRedis(config.redisUrl, config.redisConnectTimeoutSeconds);
        const [{ createQueue }, { createLogger }, pino] = await Promise.all([import('../infra/queue/create-queue.js'), import('../infra/logger.js'), import('pino')]);
        queue = await createQueue(store.db, systemClock, createLogger(config.logLevel, process.stderr.isTTY ? process.stderr : pino.destination(2)), { ...config.queue, worker: false }, { url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
      }
      return queue;
    },
  };
  try {
    return await fn(ctx);
  } finally {
    await bus?.close();
    await queue?.close();
    await store.destroy();
  }
}

/** Runs `fn` with the whole runtime (knowledge, feedback), loaded only for the commands that need it. */
export async function withRuntime<T>(opts: GlobalOptions, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const config = cliConfig();
  await checkDatabase(config, opts);
  const [{ createRuntime }, { createLogger }, pino] = await Promise.all([import('../runtime.js'), import('../infra/logger.js'), import('pino')]);
  // One-shot commands never run background jobs; `serve` does. Their log goes to stderr: stdout
  // holds only what the command prints (one JSON document with --json).
  const logger = createLogger(config.logLevel, process.stderr.isTTY ? process.stderr : pino.destination(2));
  const rt = await createRuntime({ ...config, queue: { ...config.queue, worker: false } }, { logger });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}
