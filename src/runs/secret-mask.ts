/** What a secret shows as in run events (all of it hidden; Dify shows its first 6 and last 2 characters). */
export const MASKED_SECRET = '********************';
const MARK_OPEN = '\u27e6dovetail-secret:';
const MARK_CLOSE = '\u27e7';

/**
 * Keeps the values of an app's `value_type: secret` environment variables out of what a run
 * writes: every event shows each occurrence as `MASKED_SECRET`, and the snapshot holds a marker
 * naming the variable (`⟦dovetail-secret:NAME⟧`) that `reviver` turns back into the value, read
 * again from the app (where it is stored sealed). Only string values are rewritten, never keys.
 */
export class SecretMask {
  /** [name, value], longest value first so a secret that contains another is replaced whole. */
  readonly #secrets: readonly (readonly [string, string])[];

  constructor(secrets: Readonly<Record<string, string>>) {
    this.#secrets = Object.entries(secrets)
      .filter(([, v]) => v.length > 0)
      .sort((a, b) => b[1].length - a[1].length);
  }

  get empty(): boolean {
    return this.#secrets.length === 0;
  }

  #rewrite(text: string, to: (name: string) => string): string {
    let out = text;
    for (const [name, value] of this.#secrets) if (out.includes(value)) out = out.replaceAll(value, to(name));
    return out;
  }

  /** A `JSON.stringify` replacer for events. */
  readonly eventReplacer = (_key: string, value: unknown): unknown => (typeof value === 'string' ? this.#rewrite(value, () => MASKED_SECRET) : value);

  /** A `JSON.stringify` replacer for snapshots. */
  readonly snapshotReplacer = (_key: string, value: unknown): unknown =>
    typeof value === 'string' ? this.#rewrite(value, (name) => `${MARK_OPEN}${name}${MARK_CLOSE}`) : value;

  /** A `JSON.parse` reviver that puts the secrets back into a snapshot. */
  readonly reviver = (_key: string, value: unknown): unknown => {
    if (typeof value !== 'string' || !value.includes(MARK_OPEN)) return value;
    let out = value;
    for (const [name, secret] of this.#secrets) out = out.replaceAll(`${MARK_OPEN}${name}${MARK_CLOSE}`, secret);
    return out;
  };
}
