/**
 * Debian's chromium driven by playwright-core, as the browser tests and `npm run screenshots` launch it: headless, no
 * sandbox (root in CI), no GPU, /tmp instead of a small /dev/shm. `CHROMIUM_PATH` overrides the binary.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/** Launches the browser; throws at once, with the fix, when the binary is missing. */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
}
