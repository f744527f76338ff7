import { parseTemplate } from './jinja/evaluator.js';

/**
 * The first line of a Jinja template's syntax error, or undefined when it parses: the same parser
 * that renders it (src/code/jinja), so import and run agree. The engine gets this as
 * `CompileChecks.templateSyntax` (it may import no template library).
 */
export function jinjaSyntaxError(template: string): string | undefined {
  try {
    parseTemplate(template);
    return undefined;
  } catch (err) {
    return (err as Error).message.split('\n')[0];
  }
}
