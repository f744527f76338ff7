/** People-facing form pages and the web form API. */
export interface WebFormConfig {
  /** `APP_WEB_URL`: the public base URL of the form pages, used in email links (`{APP_WEB_URL}/form/{token}`); default `http://localhost:{PORT}`. */
  readonly appWebUrl: string;
  /** `WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS`: requests per client address and window to the web form API and pages (default 30, as Dify). */
  readonly rateLimitMaxAttempts: number;
  /** `WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS` (default 60, as Dify). */
  readonly rateLimitWindowSeconds: number;
}
