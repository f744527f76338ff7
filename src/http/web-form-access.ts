import type { FastifyReply, FastifyRequest } from 'fastify';
import { webFormRateLimited } from '../forms/errors.js';
import type { Runtime } from '../runtime.js';

/**
 * The web form surface's per-address limit (`WEB_FORM_SUBMIT_RATE_LIMIT_MAX_ATTEMPTS` per
 * `WEB_FORM_SUBMIT_RATE_LIMIT_WINDOW_SECONDS`), counted in Redis when `REDIS_URL` is set so every
 * instance shares it. Throws `web_form_rate_limit_exceeded` (429) past the limit.
 */
export async function checkWebFormRate(runtime: Pick<Runtime, 'config' | 'rateLimiter'>, request: FastifyRequest): Promise<void> {
  const { rateLimitMaxAttempts: max, rateLimitWindowSeconds: windowSeconds } = runtime.config.webForms;
  const ok = await runtime.rateLimiter.hit(`web-form:${request.ip}`, max, windowSeconds * 1000);
  if (!ok) throw webFormRateLimited(max, windowSeconds);
}

/** Headers of every people-facing page: no framing, no referrer (the URL holds the token), only our own script and style. */
export function pageSecurityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store');
}
