import { existsSync } from 'node:fs';

/**
 * Debian's Chromium for the browser tests (driven by playwright-core): `CHROMIUM_PATH`, else the
 * distribution's paths. Without one the tests are skipped with a notice, except under `CI=true`,
 * where they fail (`.ci/run` installs it with apt-get).
 */
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
const IN_CI = process.env.CI === 'true';
/** Whether a browser test runs: a browser was found, or CI requires one (and the test fails without it). */
export const BROWSER_TESTS = !!CHROMIUM || IN_CI;
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

/** The skip notice of a browser test file (printed once per file, when no browser is found outside CI). */
export function noticeWithoutBrowser(what: string): void {
  if (!BROWSER_TESTS) process.stderr.write(`[dovetail tests] NOTICE: no Chromium found (/usr/bin/chromium); ${what} skipped. Install it with \`apt-get install -y chromium\`.\n`);
}

/** Fails the test file under CI when no browser was found. */
export function requireBrowser(): string {
  if (!CHROMIUM) throw new Error('CI=true and no Chromium at /usr/bin/chromium: .ci/run installs it with apt-get');
  return CHROMIUM;
}
