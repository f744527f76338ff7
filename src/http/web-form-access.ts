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
    .header('content-security-policy', pageCsp("'none'"))
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store');
}

/**
 * The same policy for the web app pages (`/chat/…`, `/completion/…`, `/workflow/…`): our own
 * script and style only, no inline script, no eval; uploads' previews as `blob:` images. Only
 * `/chatbot/…` may be framed, by any site (`framable`: Dify's embed puts it in an iframe on the
 * customer's site); every other page refuses framing.
 */
export function webAppPageHeaders(reply: FastifyReply, framable: boolean): FastifyReply {
  reply
    .header('content-security-policy', pageCsp(framable ? '*' : "'none'", "img-src 'self' data: blob:; media-src 'self' blob:"))
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store');
  if (!framable) reply.header('x-frame-options', 'DENY');
  return reply;
}

function pageCsp(frameAncestors: string, media = "img-src 'self' data:"): string {
  return `default-src 'none'; script-src 'self'; style-src 'self'; ${media}; connect-src 'self'; form-action 'self'; frame-ancestors ${frameAncestors}; base-uri 'none'`;
}
