/**
 * The dashboard in a real browser (playwright-core driving Debian's chromium) against the running service: it lists
 * every active asset; a scenario then drives USDC to DEPEG, and without a reload the overview's badge and the asset
 * page's highlighted machine state change within 5 s of the transition being acknowledged; the receipt page
 * recomputes the receipt hash in the browser, with the packages its import map loads from /static/vendor/ (the
 * `canonicalize` JCS, and @noble/hashes' SHA-256 that stands in where WebCrypto is withheld). Screenshots go to
 * test-results/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startService, type Service } from "../../src/cli/service.ts";
import { parseConfig } from "../../src/config.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort } from "../support/ports.ts";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-browser-"));
const results = join(process.cwd(), "test-results");
let nats: TestNats;
let service: Service;
let browser: Browser;
let base: string;

/**
 * USDC at par for 200 scenario seconds, then at 0.99 (100 bps: DEPEG for its 15/50/200 bps thresholds). At 10x the
 * pages have 20 s to load; the DEPEG candidate then commits after its 30 s entry dwell, 3 s later.
 */
function writeScenario(): string {
  const t0 = Date.UTC(2026, 10, 21, 9, 0, 0);
  const lines = ["# title: USDC to DEPEG for the browser test", "# expect: USDC PEGGED->DEPEG"];
  for (let s = 0; s <= 800; s += 5) {
    const market = s < 200 ? "1" : "0.99";
    lines.push(JSON.stringify({ ts: new Date(t0 + s * 1000).toISOString(), asset: "USDC", intrinsic_usd: "1", market_usd: market }));
  }
  const path = join(dir, "usdc-to-depeg.jsonl");
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  mkdirSync(results, { recursive: true });
  nats = await startNats();
  const port = await freePort();
  const config = parseConfig({
    PORT: String(port),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATA_DIR: join(dir, "data"),
    FEED: `scenario:${writeScenario()}`,
    SCENARIO_SPEED: "10",
  });
  service = await startService(config, catalog, { log: () => {} });
  base = `http://127.0.0.1:${service.api.port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("the dashboard in chromium", () => {
  it("lists every asset, then shows USDC's DEPEG live on the overview and on the machine diagram, and verifies the receipt", async () => {
    const errors: string[] = [];
    const overview = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    overview.on("pageerror", (e) => errors.push(`overview: ${e.message}`));
    overview.on("console", (m) => {
      if (m.type() === "error") errors.push(`overview console: ${m.text()}`);
    });
    await overview.goto(`${base}/`);
    await overview.waitForSelector("#assets tr[data-symbol]");
    const symbols = await overview.$$eval("#assets tr[data-symbol]", (rows) => rows.map((r) => r.getAttribute("data-symbol")));
    expect(new Set(symbols)).toEqual(new Set(catalog.active.map((a) => a.symbol)));

    const asset = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    asset.on("pageerror", (e) => errors.push(`asset: ${e.message}`));
    await asset.goto(`${base}/asset.html?symbol=USDC`);
    await asset.waitForSelector('svg#machine g[data-state="PEGGED"].current', { timeout: 20_000 });
    await overview.waitForSelector('#assets tr[data-symbol="USDC"] .badge[data-state="PEGGED"]', { timeout: 20_000 });

    // The transition, as JetStream acknowledges it.
    const acked = await new Promise<{ id: string; at: number }>((resolve) => {
      const sub = service.link.acked$.subscribe((a) => {
        if (a.receipt.asset === "USDC" && a.receipt.to_state === "DEPEG") {
          sub.unsubscribe();
          resolve({ id: a.receipt.alert_id, at: Date.now() });
        }
      });
    });
    await overview.waitForSelector('#assets tr[data-symbol="USDC"] .badge[data-state="DEPEG"]', { timeout: 5_000 });
    await asset.waitForSelector('svg#machine g[data-state="DEPEG"].current', { timeout: Math.max(1, 5_000 - (Date.now() - acked.at)) });
    expect(Date.now() - acked.at).toBeLessThan(5_000);
    await overview.waitForSelector(`#feed a[href*="${acked.id}"]`, { timeout: 5_000 });
    await overview.screenshot({ path: join(results, "dashboard-overview.png"), fullPage: false });
    await asset.screenshot({ path: join(results, "dashboard-asset-usdc.png"), fullPage: true });

    const receipt = await browser.newPage();
    receipt.on("pageerror", (e) => errors.push(`receipt: ${e.message}`));
    receipt.on("console", (m) => {
      if (m.type() === "error") errors.push(`receipt console: ${m.text()}`);
    });
    await receipt.goto(`${base}/receipt.html?id=${acked.id}`);
    await receipt.waitForSelector('#verdict[data-ok="true"]', { timeout: 15_000 });
    // The fallback digester (no WebCrypto outside a secure context) gives the same verdict in this browser. A string,
    // so that the test runner's transform leaves the page's dynamic import() alone.
    const fallback = (await receipt.evaluate(`(async () => {
      const { verifyReceipt } = await import("/static/jcs.js");
      const { fallbackSubtle } = await import("/static/sha256.js");
      const detail = await (await fetch("/v1/audit/${acked.id}/detail")).json();
      return verifyReceipt(detail, fallbackSubtle);
    })()`)) as { ok: boolean; expected: string; actual: string };
    expect(fallback).toMatchObject({ ok: true });
    expect(fallback.actual).toBe(fallback.expected);
    await receipt.screenshot({ path: join(results, "dashboard-receipt.png"), fullPage: true });
    expect(errors).toEqual([]);
  }, 120_000);
});
