/** The bounds of one template render (config settings; each error names its setting). */
export interface RenderLimits {
  /** Evaluation steps: one per expression or statement evaluated, one per item a list gets (`TEMPLATE_MAX_STEPS`). */
  readonly maxSteps: number;
  /** Wall time of one render, ms (`TEMPLATE_RENDER_TIMEOUT_MS`). */
  readonly timeoutMs: number;
  /** Longest string a render may build, its output included, characters (`TEMPLATE_TRANSFORM_MAX_LENGTH`). */
  readonly maxLength: number;
}

/** A render stopped at one of its limits; the message names the setting. */
export class TemplateLimitError extends Error {
  constructor(
    readonly limit: 'steps' | 'time' | 'output',
    limits: RenderLimits,
  ) {
    super(
      limit === 'steps'
        ? `Template rendering stopped after ${limits.maxSteps} steps (TEMPLATE_MAX_STEPS).`
        : limit === 'time'
          ? `Template rendering timed out after ${limits.timeoutMs} ms (TEMPLATE_RENDER_TIMEOUT_MS).`
          : `Output length exceeds ${limits.maxLength} characters (TEMPLATE_TRANSFORM_MAX_LENGTH)`,
    );
    this.name = 'TemplateLimitError';
  }
}
