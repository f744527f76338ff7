import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { consoleAuth } from './console-auth.js';
import { consoleSessionRoutes } from './session.js';
import { consoleAppRoutes } from './apps.js';
import { consoleMemberRoutes } from './members.js';
import { consoleFormRoutes } from './forms.js';
import { consoleStatsRoutes } from './stats.js';
import { consoleAnnotationRoutes } from './annotations.js';
import { consoleKnowledgeRoutes } from './knowledge.js';
import { consoleLogRoutes } from './logs.js';

/** Registers one console feature plugin in a scope, handing it only the runtime members it declares. */
type ConsoleFeature = (scope: FastifyInstance, runtime: Runtime) => Promise<void>;

/** A feature plugin that declares its dependencies as `Pick<Runtime, …>` (as server.ts's route plugins). */
function feature<K extends keyof Runtime>(plugin: FastifyPluginAsync<{ runtime: Pick<Runtime, K> }>, deps: readonly K[]): ConsoleFeature {
  return async (scope, runtime) => {
    const slice = Object.fromEntries(deps.map((k) => [k, runtime[k]])) as Pick<Runtime, K>;
    await scope.register(plugin, { runtime: slice });
  };
}

/**
 * The console's feature plugins (`src/http/console/<feature>.ts`), each behind the session and
 * CSRF check; one line each. Every route reads `request.consoleAccount` and scopes its queries to
 * its workspace; `requireRole(min)` guards what a role may not do.
 */
const FEATURES: readonly ConsoleFeature[] = [
  feature(consoleAppRoutes, ['apps', 'appProviders', 'appWarnings', 'bus', 'config', 'datasets', 'keys', 'runs', 'sites', 'store', 'triggers', 'mcpServers']),
  feature(consoleMemberRoutes, ['accounts']),
  feature(consoleFormRoutes, ['apps', 'config', 'forms']),
  feature(consoleStatsRoutes, ['apps', 'appStats', 'config']),
  feature(consoleAnnotationRoutes, ['apps', 'annotations']),
  feature(consoleKnowledgeRoutes, ['config', 'datasets', 'documents', 'segments', 'childChunks', 'hitTesting', 'metadata', 'pipelines', 'tags', 'uploads', 'keys']),
  feature(consoleLogRoutes, ['apps', 'messageLogs', 'workflowLogs', 'runTraces', 'config']),
];

/** The console's JSON API under `/console/api`: log-in and the session, then every feature behind `consoleAuth`. */
export async function registerConsoleApi(app: FastifyInstance, runtime: Runtime): Promise<void> {
  await app.register(
    async (api) => {
      await feature(consoleSessionRoutes, ['clock', 'config', 'consoleAuth'])(api, runtime);
      await api.register(async (scope) => {
        scope.addHook('onRequest', consoleAuth(runtime));
        for (const register of FEATURES) await register(scope, runtime);
      });
    },
    { prefix: '/console/api' },
  );
}
