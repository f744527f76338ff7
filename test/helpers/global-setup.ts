import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Tests of the `dovetail` binary and of `npm start` run the compiled `dist/` (as users do); the
 * rest import the TypeScript sources. Rebuild `dist/` when a source is newer than the last build.
 */
function buildIfStale(): void {
  const stamp = path.join(ROOT, 'dist', '.tsbuildinfo');
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  const src = path.join(ROOT, 'src');
  const stale = readdirSync(src, { recursive: true }).some((f) => statSync(path.join(src, String(f))).mtimeMs > built);
  if (!stale) return;
  process.stdout.write('[dovetail tests] building dist/ (npm run build)\n');
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  // An incremental build that finds no changed content (a file rewritten by git with the same
  // bytes) leaves the stamp as it was; mark the build done so neither this check nor the
  // `dovetail` bin's stale-build warning fires again for it.
  const now = new Date();
  if (existsSync(stamp)) utimesSync(stamp, now, now);
}

/** The web app pages' bundle (dist/web-app/, scripts/build-web.mjs): rebuilt when a file under web/ is newer. */
function buildWebIfStale(): void {
  const stamp = path.join(ROOT, 'dist', 'web-app', 'manifest.json');
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  const web = path.join(ROOT, 'web');
  const stale = readdirSync(web, { recursive: true }).some((f) => statSync(path.join(web, String(f))).mtimeMs > built);
  if (!stale) return;
  process.stdout.write('[dovetail tests] building dist/web-app/ (npm run build:web)\n');
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-web.mjs')], { stdio: 'inherit' });
}

/**
 * Where PostgreSQL has pgvector, the servers' start-up probe picks it. The extension is created here
 * first, in the database's default schema: a server would otherwise create it in its own test
 * schema, and dropping that schema at the end would take the extension from every other test.
 */
async function pgvectorFirst(url: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS vector');
    process.stdout.write('[dovetail tests] pgvector: available; PostgreSQL servers search with it\n');
  } catch (err) {
    process.stdout.write(`[dovetail tests] pgvector: not available (${(err as Error).message}); PostgreSQL servers scan exactly\n`);
  } finally {
    await client.end();
  }
}

/** The part of Vitest's TestProject this setup reads. */
interface ProjectLike {
  readonly name: string;
  readonly config: { readonly env?: Record<string, unknown> };
  provide(key: 'postgresTemplate', value: string): void;
}

/**
 * Runs once per project (`sqlite`, and `postgres` when TEST_DATABASE_URL is set; see
 * vitest.config.ts): prints which storage the project runs on and what is skipped; builds dist/
 * when stale (the first caller finds it stale, the others not).
 */
export default async function setup(project: ProjectLike): Promise<void> {
  buildIfStale();
  buildWebIfStale();
  if (!project.name) return; // the root of the two projects: they print for themselves
  const pg = project.config.env?.TEST_DATABASE_URL;
  const redis = process.env.TEST_REDIS_URL;
  process.stdout.write(`\n[dovetail tests] ${project.name}: storage: ${pg ? 'PostgreSQL (TEST_DATABASE_URL)' : 'SQLite'}\n`);
  if (typeof pg === 'string' && pg) {
    await pgvectorFirst(pg);
    // every new test schema of the run starts as a copy of one migrated schema (db-template.ts)
    const { makePostgresTemplate } = await import('./db-template.js');
    const template = await makePostgresTemplate(pg);
    process.stdout.write(`[dovetail tests] PostgreSQL test schemas: ${template ? 'copied from a migrated template (pg_dump)' : 'migrated one by one (no pg_dump of the server\'s version)'}\n`);
    project.provide('postgresTemplate', template ?? '');
    return;
  }
  if (!process.env.TEST_DATABASE_URL) process.stdout.write('[dovetail tests] NOTICE: TEST_DATABASE_URL is not set; the PostgreSQL project is skipped (the suite runs on SQLite only).\n');
  if (!redis) process.stdout.write('[dovetail tests] NOTICE: TEST_REDIS_URL is not set; Redis tests are skipped.\n');
}
