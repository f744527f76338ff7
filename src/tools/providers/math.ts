import type { MathJsInstance } from 'mathjs';
import { ToolError, type ToolProvider } from '../tool.js';

/** Longest expression accepted (characters); longer ones are refused before parsing. */
export const MATH_EXPRESSION_MAX_CHARS = 2000;

// mathjs' own advice for untrusted input: no import / unit creation / nested parsing; plus the
// functions that allocate in proportion to a number in the expression (ones(1e9)), so a DSL or a
// model cannot make one call take the process' memory or stall the event loop.
const BLOCKED = ['import', 'createUnit', 'evaluate', 'parse', 'compile', 'simplify', 'derivative', 'resolve', 'reviver', 'range', 'ones', 'zeros', 'identity', 'matrix', 'sparse', 'random', 'randomInt', 'pickRandom', 'resize', 'concat', 'kron', 'diag', 'bernoulli', 'bellNumbers', 'stirlingS2', 'catalan', 'composition'];

/**
 * mathjs, loaded and locked down on the first expression: importing it builds every function it
 * has (the largest import of the server by far), which every process (a CLI command included)
 * would otherwise pay at start.
 */
let mathjs: Promise<{ math: MathJsInstance; evaluate: MathJsInstance['evaluate'] }> | undefined;
function loadMath(): Promise<{ math: MathJsInstance; evaluate: MathJsInstance['evaluate'] }> {
  return (mathjs ??= import('mathjs').then(({ all, create }) => {
    const math = create(all, { number: 'number' });
    const evaluate = math.evaluate.bind(math);
    const refuse = (name: string) => () => {
      throw new Error(`function ${name} is not available`);
    };
    math.import(Object.fromEntries(BLOCKED.map((n) => [n, refuse(n)])), { override: true });
    return { math, evaluate };
  }));
}

function format(math: MathJsInstance, v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(15)));
  return math.format(v as never, { precision: 15 });
}

/**
 * A `math` provider: `eval_expression` evaluates an arithmetic expression with mathjs' own parser
 * (no JavaScript `eval`, no code), e.g. `2 * (3 + 4) ^ 2`, `sqrt(16) + sin(pi / 2)`, `5 cm to inch`.
 */
export const mathProvider: ToolProvider = {
  name: 'math',
  tools: [
    {
      name: 'eval_expression',
      description: 'Evaluates a mathematical expression and returns the result, e.g. "2 * (3 + 4) ^ 2" or "sqrt(16)".',
      parameters: [{ name: 'expression', type: 'string', form: 'llm', required: true, llmDescription: 'The mathematical expression to evaluate' }],
      async invoke(p) {
        const expr = String(p.expression ?? '').trim();
        if (expr === '') throw new ToolError('expression is required', 'ToolParameterError');
        if (expr.length > MATH_EXPRESSION_MAX_CHARS) throw new ToolError(`expression is longer than ${MATH_EXPRESSION_MAX_CHARS} characters`, 'ToolParameterError');
        const { math, evaluate } = await loadMath();
        let result: unknown;
        try {
          result = evaluate(expr, {});
        } catch (err) {
          throw new ToolError(`Invalid expression "${expr}": ${(err as Error).message}`);
        }
        if (typeof result === 'function' || result === undefined) throw new ToolError(`Invalid expression "${expr}": it does not evaluate to a value`);
        return [{ type: 'text', text: format(math, result) }];
      },
    },
  ],
};
