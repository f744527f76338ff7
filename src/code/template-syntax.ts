import nunjucks from 'nunjucks';

/**
 * The first line of a Jinja template's syntax error, or undefined when it parses. Compiles to
 * source text only: the template's code is never evaluated here (it runs in the sandbox,
 * src/code/sandbox). The engine gets this as `CompileChecks.templateSyntax`: nunjucks loads its
 * file-system loaders, which the engine may not.
 */
export function jinjaSyntaxError(template: string): string | undefined {
  try {
    nunjucks.precompileString(template, { name: 'template' });
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  }
}
