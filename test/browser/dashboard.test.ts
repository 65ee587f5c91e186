/**
 * The dashboard in a real browser (playwright-core driving Debian's chromium) against the running service: it lists
 * every active asset; a scenario then drives USDC to DEPEG, and without a reload the overview's badge and the asset
 * page's highlighted machine state change within 5 s of the transition being acknowledged; the receipt page
 * re-derives the receipt in the browser. Every page runs the client package's browser module
 * (/static/vendor/peg-client.js, through its import map): the live connection is PegStream, and the receipt check is
 * verifyReceipt. The overview's connection is routed through Playwright: once the page is live the service closes it
 * (a frame over its size limit, sent by the route), and the reconnection is held until the DEPEG transition is
 * acknowledged, so the page only gets that transition by resuming: its new subscription carries `since_seq` and the
 * server replays the transition on it. Screenshots go to test-results/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, type WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { launchChromium } from "../support/chromium.ts";

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-browser-"));
const results = join(process.cwd(), "test-results");
let running: TestService;
let browser: Browser;
let base: string;

/**
 * USDC at par for 200 scenario seconds, then at 0.99 (100 bps: DEPEG for its 15/50/200 bps thresholds). At 10x the
 * pages have 20 s to load; the DEPEG candidate then commits after its 30 s entry dwell, 3 s later.
 */
function writeScenario(): string {
  // Recent: the service accepts samples only so many days back from the wall clock (HISTORY_RAW_DAYS).
  const t0 = Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000;
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
  mkdirSync(results, { recursive: true });
  running = await startTestService({
    env: {
      FEED: `scenario:${writeScenario()}`,
      SCENARIO_SPEED: "10",
      // One address plays the overview, the asset page and the receipt page: in the first hours after a start the
      // overview fetches its young sparklines' minutes (one /history call every 3 s) and the asset page polls its
      // machine, which together can spend the default 60 a minute and hold back the WebSocket's reconnect.
      RATE_LIMIT_PER_MIN: "600",
    },
    catalog,
    dataDir: join(dir, "data"),
  });
  base = running.base;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await running?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The responses of the client's browser module a page received. */
function bundleLoads(page: Page): number[] {
  const statuses: number[] = [];
  page.on("response", (r) => {
    if (new URL(r.url()).pathname === "/static/vendor/peg-client.js") statuses.push(r.status());
  });
  return statuses;
}

/** One routed WebSocket connection of a page: what the page sent and what the server sent it. */
interface Routed {
  readonly sent: Record<string, unknown>[];
  readonly received: Record<string, unknown>[];
  server: WebSocketRoute | null;
}

describe("the dashboard in chromium", () => {
  it("lists every asset, then shows USDC's DEPEG live on the overview and on the machine diagram, and verifies the receipt", async () => {
    // The transition, as JetStream acknowledges it.
    const acked = new Promise<{ id: string; at: number }>((resolve) => {
      const sub = running.service.link.acked$.subscribe((a) => {
        if (a.receipt.asset === "USDC" && a.receipt.to_state === "DEPEG") {
          sub.unsubscribe();
          resolve({ id: a.receipt.alert_id, at: Date.now() });
        }
      });
    });
    const errors: string[] = [];
    const overview = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const overviewBundle = bundleLoads(overview);
    overview.on("pageerror", (e) => errors.push(`overview: ${e.message}`));
    overview.on("console", (m) => {
      if (m.type() === "error") errors.push(`overview console: ${m.text()}`);
    });
    const routed: Routed[] = [];
    await overview.routeWebSocket(/\/v1\/ws$/, async (ws) => {
      const c: Routed = { sent: [], received: [], server: null };
      routed.push(c);
      // The first connection goes through at once; a reconnection waits until the transition is acknowledged (the
      // page's socket stays connecting meanwhile), so the page can only learn of it by resuming.
      if (routed.length > 1) await acked;
      const server = ws.connectToServer();
      c.server = server;
      ws.onMessage((m) => {
        c.sent.push(JSON.parse(String(m)) as Record<string, unknown>);
        server.send(m);
      });
      server.onMessage((m) => {
        c.received.push(JSON.parse(String(m)) as Record<string, unknown>);
        ws.send(m);
      });
    });
    await overview.goto(`${base}/`);
    await overview.waitForSelector("#assets tr[data-symbol]");
    const symbols = await overview.$$eval("#assets tr[data-symbol]", (rows) => rows.map((r) => r.getAttribute("data-symbol")));
    expect(new Set(symbols)).toEqual(new Set(catalog.active.map((a) => a.symbol)));

    const asset = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const assetBundle = bundleLoads(asset);
    asset.on("pageerror", (e) => errors.push(`asset: ${e.message}`));
    await asset.goto(`${base}/asset.html?symbol=USDC`);
    await asset.waitForSelector('svg#machine g[data-state="PEGGED"].current', { timeout: 20_000 });
    await overview.waitForSelector('#assets tr[data-symbol="USDC"] .badge[data-state="PEGGED"]', { timeout: 20_000 });
    await overview.waitForSelector('#conn[data-status="connected"]', { timeout: 5_000 });

    // The service closes the overview's connection, before the transition: the route sends it a frame over its 16 KiB
    // limit, which it answers by closing with 1009 (the page sees the server's close, as after a restart).
    expect(routed).toHaveLength(1);
    expect(routed[0]!.sent[0]).toEqual({ op: "subscribe", assets: ["*"] });
    const seqBefore = Math.max(...routed[0]!.received.filter((m) => typeof m["seq"] === "number" && m["type"] !== "hello").map((m) => m["seq"] as number));
    expect(Number.isInteger(seqBefore)).toBe(true);
    routed[0]!.server!.send(JSON.stringify({ op: "ping", pad: "x".repeat(20_000) }));
    await overview.waitForSelector('#conn[data-status="reconnecting"]', { timeout: 5_000 });

    const { id, at } = await acked;
    await overview.waitForSelector('#assets tr[data-symbol="USDC"] .badge[data-state="DEPEG"]', { timeout: 5_000 });
    await asset.waitForSelector('svg#machine g[data-state="DEPEG"].current', { timeout: Math.max(1, 5_000 - (Date.now() - at)) });
    expect(Date.now() - at).toBeLessThan(5_000);
    await overview.waitForSelector(`#feed a[href*="${id}"]`, { timeout: 5_000 });
    // PegStream resumed: the page reconnected on its own, subscribed from the last sequence it had, and the server
    // replayed the transition it missed on that connection.
    expect(routed.length).toBeGreaterThanOrEqual(2);
    const resumed = routed.at(-1)!;
    expect(resumed.sent[0]).toEqual({ op: "subscribe", assets: ["*"], since_seq: seqBefore });
    expect(resumed.received.filter((m) => m["type"] === "transition").map((m) => m["alert_id"])).toContain(id);
    expect(routed[0]!.received.filter((m) => m["type"] === "transition").map((m) => m["alert_id"])).not.toContain(id);
    await overview.waitForSelector('#conn[data-status="connected"]', { timeout: 5_000 });
    await overview.screenshot({ path: join(results, "dashboard-overview.png"), fullPage: false });
    await asset.screenshot({ path: join(results, "dashboard-asset-usdc.png"), fullPage: true });

    const receipt = await browser.newPage();
    const receiptBundle = bundleLoads(receipt);
    receipt.on("pageerror", (e) => errors.push(`receipt: ${e.message}`));
    receipt.on("console", (m) => {
      if (m.type() === "error") errors.push(`receipt console: ${m.text()}`);
    });
    await receipt.goto(`${base}/receipt.html?id=${id}`);
    await receipt.waitForSelector('#verdict[data-ok="true"][data-verdict="PASS"]', { timeout: 15_000 });
    // The page's check is the package's verifyReceipt (the import map's module): it re-derives the verdict with no
    // WebCrypto at all, and refuses a tampered bundle. A string, so that the test runner's transform leaves the page's
    // dynamic import() alone.
    const check = (await receipt.evaluate(`(async () => {
      Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
      const { verifyReceipt } = await import("@peg-oracle/client");
      const bundle = await (await fetch("/v1/audit/${id}/replay-bundle")).json();
      const detail = await (await fetch("/v1/audit/${id}/detail")).json();
      const v = verifyReceipt(bundle);
      const tampered = verifyReceipt({ ...bundle, expected_receipt_sha256: "0".repeat(64) });
      return { ok: v.ok, verdict: v.verdict, hash: v.receiptSha256, shown: detail.receipt_sha256, tampered: tampered.verdict };
    })()`)) as { ok: boolean; verdict: string; hash: string; shown: string; tampered: string };
    expect(check).toMatchObject({ ok: true, verdict: "PASS", tampered: "FAIL" });
    expect(check.hash).toBe(check.shown);
    expect(await receipt.textContent("#verdict")).toContain(check.hash);
    await receipt.screenshot({ path: join(results, "dashboard-receipt.png"), fullPage: true });

    // Every page loaded the client's browser module.
    for (const [page, loads] of [["overview", overviewBundle], ["asset", assetBundle], ["receipt", receiptBundle]] as const) {
      expect(loads, page).toEqual([200]);
    }
    expect(errors).toEqual([]);
  }, 120_000);
});
