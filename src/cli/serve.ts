import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, configFile, loadConfig, parseRole } from '../config.js';
import { configuredProviders } from '../llm/provider-readiness.js';
import { describeDatabase } from '../store/database-location.js';
import { missingServerFlags } from './node-flags.js';

/** `examples/` of the package: beside `src/` (tsx) and beside `dist/` (compiled) alike. */
const EXAMPLES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');

/** How long after SHUTDOWN_TIMEOUT_SECONDS a shutdown that has not finished is cut off by exiting. */
const HARD_EXIT_MARGIN_MS = 10_000;

/** How long a start that failed may take to close what it opened before the process exits anyway. */
const START_FAILURE_CLOSE_MS = 3000;

/** A port that cannot be listened on is a setting error naming PORT (and HOST). */
function listenError(err: NodeJS.ErrnoException, port: number, host: string): Error {
  if (err.code === 'EADDRINUSE') return new ConfigError(`PORT ${port} on HOST ${host} is already in use (another process listens on it); choose another PORT or stop that process`);
  if (err.code === 'EACCES') return new ConfigError(`PORT ${port} on HOST ${host} cannot be listened on: permission denied (ports below 1024 need privileges)`);
  if (err.code === 'EADDRNOTAVAIL') return new ConfigError(`HOST ${host} is not an address of this machine (EADDRNOTAVAIL); set HOST to one of its addresses or 0.0.0.0`);
  return err;
}

/**
 * `dovetail serve`: the HTTP server until SIGTERM or SIGINT, then a graceful shutdown (see
 * shutDownGracefully) bounded by SHUTDOWN_TIMEOUT_SECONDS; a second signal exits at once.
 * stdout carries only the JSON log; what a person reads at start — the example apps' keys (shown
 * once) and the address — goes to the terminal on stderr as plain text, never into the log.
 */
export async function serve(opts: { role?: string } = {}): Promise<void> {
  // `--role` wins over DOVETAIL_ROLE
  const config = loadConfig(process.env, opts.role === undefined ? {} : { role: parseRole(opts.role, '--role') });
  const [{ createRuntime }, { buildServer }, { shutDownGracefully }, { seedExamples }] = await Promise.all([
    import('../runtime.js'),
    import('../http/server.js'),
    import('../http/graceful-shutdown.js'),
    import('../seed.js'),
  ]);
  const runtime = await createRuntime(config);
  let app: Awaited<ReturnType<typeof buildServer>>;
  try {
    runtime.logger.info({ database: describeDatabase(config) }, 'database');
    // one line saying where the settings came from and which model providers they set up
    const settingsFile = configFile() ?? null;
    const providers = configuredProviders(config.providers);
    const fallback = config.providers.default;
    runtime.logger.info(
      { settingsFile, providers, ...(fallback ? { providersDefault: fallback } : {}) },
      `settings: ${settingsFile ?? 'environment only (no dovetail.yaml)'}; model providers: ${providers.length > 0 ? providers.join(', ') : 'none configured (only the built-in mock model answers)'}${fallback ? `; unknown providers go to ${fallback}` : ''}`,
    );
    const missing = missingServerFlags();
    if (missing.length > 0) {
      runtime.logger.info({ missing }, `node runs without ${missing.join(' ')}, which npm start passes: a burst of requests after a quiet period is slower (see docs/deployment.md)`);
    }
    // the example apps are imported by a process that serves them (and not by every worker as well)
    if (config.seedExamples && config.role !== 'worker') {
      const seeded = await seedExamples(runtime, EXAMPLES_DIR);
      if (seeded.length > 0) {
        process.stderr.write('\nImported the example apps. Their API keys are shown only this once:\n\n');
        for (const s of seeded) process.stderr.write(`  ${s.name.padEnd(32)} ${s.mode.padEnd(14)} ${s.apiKey}\n`);
        process.stderr.write('\n');
      }
    }
    app = await buildServer(runtime);
    await app.listen({ port: config.port, host: config.host }).catch((err: NodeJS.ErrnoException) => {
      throw listenError(err, config.port, config.host);
    });
  } catch (err) {
    // A start that failed ends the process (see main): what the runtime opened is closed first, within a bound.
    await Promise.race([runtime.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, START_FAILURE_CLOSE_MS).unref())]);
    throw err;
  }
  // After the server answers: the apps are read and the sandboxes their code nodes need start in
  // the background, so neither delays `/health` nor the first request (docs/speed.md, "Start-up").
  runtime.warmWorkers();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const roleNote = config.role === 'all' ? '' : ` (role ${config.role}${config.role === 'worker' ? ': only /health, /ready and /metrics' : ''})`;
  process.stderr.write(`Dovetail is listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}/v1${roleNote}\n`);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      runtime.logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    runtime.logger.info({ signal, timeoutSeconds: config.shutdownTimeoutSeconds }, 'shutting down');
    // Nothing may hold the process past the grace period for long: a close that hangs (a
    // connection that never ends, a driver that never answers) is cut off.
    setTimeout(() => {
      runtime.logger.error({ afterMs: config.shutdownTimeoutSeconds * 1000 + HARD_EXIT_MARGIN_MS }, 'shutdown did not finish: exiting now');
      process.exit(1);
    }, config.shutdownTimeoutSeconds * 1000 + HARD_EXIT_MARGIN_MS).unref();
    shutDownGracefully(app, runtime, config.shutdownTimeoutSeconds * 1000).then(
      () => process.exit(0),
      (err: unknown) => {
        runtime.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
