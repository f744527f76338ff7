import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Console passwords, hashed with scrypt (node:crypto, on libuv's thread pool: the event loop is
 * not held). The stored string carries everything needed to check it later, so the parameters can
 * be raised without invalidating old hashes: `scrypt$N$r$p$<salt>$<hash>`, salt and hash base64url.
 */
const N = 1 << 14;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** What a stored string may ask for (a tampered row must not make a check take gigabytes). */
const MAX_N = 1 << 20;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const opts: ScryptOptions = { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_BYTES, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

/** A new hash of `password` with a fresh random salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Whether `password` matches `stored` (a string of `hashPassword`); false for a malformed one. Compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (!Number.isInteger(n) || n < 2 || n > MAX_N || (n & (n - 1)) !== 0 || !Number.isInteger(r) || r < 1 || r > 32 || !Number.isInteger(p) || p < 1 || p > 16) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length !== KEY_BYTES) return false;
  const key = await derive(password, salt, n, r, p);
  return timingSafeEqual(key, expected);
}

/** A hash of no password anyone has: checked against when the email is unknown, so that answer takes as long as a wrong password. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64url'));
  return decoy;
}
