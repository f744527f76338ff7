import type { TemplateRenderer } from '../engine/types.js';
import { CodeExecutionError } from './code-execution-error.js';
import { parseTemplate, renderBounded, type Program } from './jinja/evaluator.js';
import { TemplateLimitError, type RenderLimits } from './jinja/render-limits.js';

/** Parsed templates kept per source text (a workflow renders the same few templates on every run). */
const CACHE_SIZE = 500;

/**
 * Jinja2 templates (template-transform nodes) rendered in the server's own thread by an
 * interpreter that walks the template's syntax tree over plain data (src/code/jinja): no
 * JavaScript is generated or evaluated, so there is no realm to escape from and no worker to hop
 * to. A render is bounded by `TEMPLATE_MAX_STEPS`, `TEMPLATE_RENDER_TIMEOUT_MS` and
 * `TEMPLATE_TRANSFORM_MAX_LENGTH`; the error names the setting.
 */
export class JinjaTemplates implements TemplateRenderer {
  readonly #limits: RenderLimits;
  readonly #now: () => number;
  readonly #parsed = new Map<string, Program>();

  constructor(limits: RenderLimits, now: () => number = () => performance.now()) {
    this.#limits = limits;
    this.#now = now;
  }

  render(template: string, vars: Readonly<Record<string, unknown>>, signal: AbortSignal): Promise<string> {
    try {
      signal.throwIfAborted();
      return Promise.resolve(this.renderNow(template, vars));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /** Renders at once; throws a `CodeExecutionError` with the message the node reports. */
  renderNow(template: string, vars: Readonly<Record<string, unknown>>): string {
    let program: Program;
    try {
      program = this.#program(template);
    } catch (err) {
      throw new CodeExecutionError(`template rendering failed: ${firstLine(err)}`);
    }
    try {
      return renderBounded(program, vars, this.#limits, this.#now);
    } catch (err) {
      if (err instanceof TemplateLimitError) throw new CodeExecutionError(err.message);
      if (err instanceof RangeError && /call stack/i.test(err.message)) throw new CodeExecutionError('template rendering failed: recursion too deep');
      if (err instanceof RangeError && /string length/i.test(err.message)) throw new CodeExecutionError(new TemplateLimitError('output', this.#limits).message);
      throw new CodeExecutionError(`template rendering failed: ${firstLine(err)}`);
    }
  }

  #program(template: string): Program {
    let program = this.#parsed.get(template);
    if (program) return program;
    program = parseTemplate(template);
    if (this.#parsed.size >= CACHE_SIZE) this.#parsed.delete(this.#parsed.keys().next().value!);
    this.#parsed.set(template, program);
    return program;
  }
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}
