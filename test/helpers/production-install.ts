/**
 * The production install, as docs/deployment.md documents it and the Dockerfile runs it: one list
 * the production-install test runs and the Dockerfile test compares the Dockerfile's RUN and CMD
 * lines with.
 */
export const PRODUCTION_INSTALL = {
  /** The build stage, with the dev dependencies: install everything, compile src/ to dist/. */
  build: ['npm ci', 'npm run build'],
  /** Beside the dist/ built above: the runtime dependencies only (`prepare` skips the build). */
  install: ['npm ci --omit=dev'],
  /** What `npm start` runs (package.json's `start`, without its `exec`). */
  start: ['node', '--no-memory-reducer', 'bin/dovetail.js', 'serve'],
} as const;

/** The role commands of the distributed mode (docs/deployment.md, "Processes and roles"). */
export const ROLE_COMMANDS = {
  api: [...PRODUCTION_INSTALL.start, '--role', 'api'],
  worker: ['node', '--no-memory-reducer', 'bin/dovetail.js', 'worker'],
} as const;
