import type { FastifyRequest } from 'fastify';
import { unsupportedMediaType } from '../infra/errors.js';

/**
 * preValidation hook for JSON endpoints: like Dify, a body that is not `application/json` is a
 * 415 before anything else is looked at.
 */
export async function requireJson(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type'];
  if (!type || !/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
    throw unsupportedMediaType("Did not attempt to load JSON data because the request Content-Type was not 'application/json'.");
  }
}
