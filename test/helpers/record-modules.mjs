// `node --import ./record-modules.mjs …`: appends the URL of every module the process loads to the
// file RECORD_MODULES_TO names (test/e2e/cli-startup.test.ts reads which modules a command or the
// server loads): ES modules through a loader hook, CommonJS modules (a package `require`d by
// another, or by a lazy loader) as each is compiled.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const out = process.env.RECORD_MODULES_TO;
register(new URL('./record-modules-hooks.mjs', import.meta.url), { data: { out } });
if (out) {
  const extensions = Module._extensions;
  for (const ext of ['.js', '.cjs', '.json', '.node']) {
    const compile = extensions[ext];
    if (!compile) continue;
    extensions[ext] = function (module, filename) {
      appendFileSync(out, `${pathToFileURL(filename).href}\n`);
      return compile.call(this, module, filename);
    };
  }
}
