// `node --import ./record-modules.mjs …`: appends the URL of every ES module the process loads to
// the file RECORD_MODULES_TO names (test/e2e/cli-startup.test.ts reads which modules a command loads).
import { register } from 'node:module';

register(new URL('./record-modules-hooks.mjs', import.meta.url), { data: { out: process.env.RECORD_MODULES_TO } });
