/** Prints, once per run, which storage the suite runs on and what is skipped. */
export default function setup(): void {
  const pg = process.env.TEST_DATABASE_URL;
  const redis = process.env.TEST_REDIS_URL;
  process.stdout.write(`\n[dovetail tests] storage: ${pg ? 'PostgreSQL (TEST_DATABASE_URL)' : 'SQLite'}\n`);
  if (!pg) process.stdout.write('[dovetail tests] NOTICE: TEST_DATABASE_URL is not set; PostgreSQL runs are skipped (the suite runs on SQLite).\n');
  if (!redis) process.stdout.write('[dovetail tests] NOTICE: TEST_REDIS_URL is not set; Redis tests are skipped.\n');
}
