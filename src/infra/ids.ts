import { randomBytes, randomUUID, createHash } from 'node:crypto';

/** A new UUID v4 (Dify ids are UUIDs). */
export function newId(): string {
  return randomUUID();
}

/** A random URL-safe secret with `bytes`×8 bits of entropy (default 192). */
export function newSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
