import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { ServerKeys } from './server-keys.js';

const PREFIX = 'dovetail-sealed:v1:';
const KEY_NAME = 'secret_box_key';

/**
 * Encrypts values kept at rest (secret environment variables of an app, form tokens): AES-256-GCM
 * under a server key (`SECRET_KEY`-derived, or kept in the database), as `dovetail-sealed:v1:` +
 * base64(iv ‖ tag ‖ ciphertext). `open` passes a value without the prefix through unchanged, so
 * rows written before sealing existed still read.
 */
export class SecretBox {
  readonly #keys: ServerKeys;

  constructor(keys: ServerKeys) {
    this.#keys = keys;
  }

  async seal(plain: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', await this.#keys.key(KEY_NAME), iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
  }

  async open(value: string): Promise<string> {
    if (!SecretBox.isSealed(value)) return value;
    const raw = Buffer.from(value.slice(PREFIX.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', await this.#keys.key(KEY_NAME), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && value.startsWith(PREFIX);
  }
}
