import * as crypto from 'node:crypto';
import { randomBytes, randomUUID, createHash } from 'node:crypto';

/** A new UUID v4 (Dify ids are UUIDs). */
export function newId(): string {
  return randomUUID();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `v` is a UUID (any version, any case): ids are checked before they reach a query. */
export function isUuid(v: string): boolean {
  return UUID.test(v);
}

/** A random URL-safe secret with `bytes`×8 bits of entropy (default 192). */
export function newSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/** One-shot hashing (`crypto.hash`, Node ≥ 20.12) costs about half of a Hash object per short text. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export function sha256(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : createHash('sha256').update(text).digest('hex');
}
