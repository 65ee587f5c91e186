/**
 * `npm run screenshots`: the README's pictures of the dashboard, taken from the real service in Debian's chromium
 * (playwright-core, as the browser tests drive it; `CHROMIUM_PATH` to use another). The service runs in-process on
 * the simulated market (seeded: `SIM_SEED`, default 7) with its own nats-server, PGlite and data directory in a
 * temporary folder; the first incident takes an asset to DEPEG within about a minute. Once it has held for 150 s
 * (`SCREENSHOT_HOLD_MS`), three PNGs go to docs/img/:
 *
 * - `overview.png`: the overview (state summary, monitoring-only marks, sparklines of the first minutes, the feed);
 * - `asset-depeg.png`: that asset's page, its chart zoomed to the minutes since the start (raw samples);
 * - `receipt.png`: the receipt page of its DEPEG transition, re-derived in the browser.
 *
 * About four minutes on a 2-core machine.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Page } from "playwright-core";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { startService } from "../src/cli/service.ts";
import { parseConfig } from "../src/config.ts";
import { startNats } from "../test/support/nats.ts";
import { freePort } from "../test/support/ports.ts";
import { launchChromium } from "../test/support/chromium.ts";

const OUT = fileURLToPath(new URL("../docs/img/", import.meta.url));
const SEED = process.env["SIM_SEED"] ?? "7";
const HOLD_MS = Number(process.env["SCREENSHOT_HOLD_MS"] ?? 150_000);
const DEPEG_TIMEOUT_MS = 240_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (msg: string): void => console.log(`[screenshots] ${msg}`);

async function shoot(page: Page, name: string): Promise<void> {
  const path = join(OUT, name);
  await page.screenshot({ path, fullPage: false });
  log(`wrote ${path}`);
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "peg-screenshots-"));
  const nats = await startNats();
  const catalog = loadShippedCatalog();
  const config = parseConfig({
    PORT: String(await freePort()),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATA_DIR: join(dir, "data"),
    FEED: "sim",
    SIM_SEED: SEED,
    RATE_LIMIT_PER_MIN: "600", // three pages from one address
  });
  const startedAt = Date.now();
  const service = await startService(config, catalog, { log: () => {} });
  const browser = await launchChromium();
  try {
    const base = `http://127.0.0.1:${service.api.port}`;
    log(`service on ${base}, simulated market seed ${SEED}; waiting for the first DEPEG`);
    const depeg = await new Promise<{ id: string; asset: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no DEPEG within ${DEPEG_TIMEOUT_MS / 1000} s`)), DEPEG_TIMEOUT_MS);
      const sub = service.link.acked$.subscribe((a) => {
        if (a.receipt.to_state === "DEPEG") {
          clearTimeout(timer);
          sub.unsubscribe();
          resolve({ id: a.receipt.alert_id, asset: a.receipt.asset });
        }
      });
    });
    log(`${depeg.asset} DEPEG (${depeg.id}); holding ${HOLD_MS / 1000} s`);
    // The overview is open through the hold: it fetches the minutes of the rows in view one call every 3 s.
    const overview = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await overview.goto(`${base}/`);
    await sleep(HOLD_MS);
    await overview.waitForSelector(`#feed li[data-id="${depeg.id}"]`, { timeout: 30_000 });
    await overview.waitForSelector(`#assets tr[data-symbol="${depeg.asset}"] .spark-cell[data-series="minutes"] path.spark-line`, { state: "attached", timeout: 30_000 });
    await sleep(2000);
    await shoot(overview, "overview.png");

    const asset = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    const from = new Date(startedAt).toISOString();
    const to = new Date(Date.now() + 5_000).toISOString();
    await asset.goto(`${base}/asset.html?symbol=${encodeURIComponent(depeg.asset)}&from=${from}&to=${to}`);
    await asset.waitForSelector(`[data-chart="discount-history"] a.marker[data-alert-id="${depeg.id}"]`, { timeout: 30_000 });
    await asset.waitForSelector('svg#machine g[data-state="DEPEG"].current', { timeout: 30_000 });
    await shoot(asset, "asset-depeg.png");

    const receipt = await browser.newPage({ viewport: { width: 1280, height: 820 } });
    await receipt.goto(`${base}/receipt.html?id=${depeg.id}`);
    await receipt.waitForSelector('#verdict[data-ok="true"][data-verdict="PASS"]', { timeout: 30_000 });
    await shoot(receipt, "receipt.png");
  } finally {
    await browser.close();
    await service.stop();
    await nats.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
