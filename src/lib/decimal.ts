/**
 * Exact decimal arithmetic on strings (prices), through scaled BigInts. Dify quantizes prices to
 * 7 decimal places, rounding half up.
 */
const SCALE = 18;
const ONE = 10n ** BigInt(SCALE);

function toScaled(s: string): bigint {
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(s.trim());
  if (!m) throw new Error(`not a decimal: ${s}`);
  const frac = (m[3] ?? '').padEnd(SCALE, '0').slice(0, SCALE);
  const v = BigInt(m[2] || '0') * ONE + BigInt(frac || '0');
  return m[1] ? -v : v;
}

function fromScaled(v: bigint, places: number): string {
  const neg = v < 0n;
  let a = neg ? -v : v;
  const step = 10n ** BigInt(SCALE - places);
  a = ((a + step / 2n) / step) * step;
  const int = a / ONE;
  const frac = (a % ONE).toString().padStart(SCALE, '0').slice(0, places);
  return `${neg && a !== 0n ? '-' : ''}${int}${places > 0 ? `.${frac}` : ''}`;
}

/** `tokens × unitPrice × priceUnit`, quantized to `places` decimals. */
export function priceOf(tokens: number, unitPrice: string, priceUnit: string, places = 7): string {
  const v = (BigInt(tokens) * toScaled(unitPrice) * toScaled(priceUnit)) / ONE;
  return fromScaled(v, places);
}

/** Sum of decimal strings, quantized to `places` decimals. */
export function addDecimals(values: readonly string[], places = 7): string {
  return fromScaled(values.reduce((acc, v) => acc + toScaled(v), 0n), places);
}
