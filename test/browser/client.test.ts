/**
 * `@peg-oracle/client` in a real browser (playwright-core driving Debian's chromium) against the running service.
 *
 * The package entry is bundled for the browser platform with esbuild exactly as `npm run client:browser` bundles the
 * module the dashboard serves (packages/client/scripts/build-browser.ts), which fails on any Node built-in
 * (`node:crypto`, `Buffer` has no polyfill either): the bundle building at all is the "no Node built-ins" check, for
 * the package and for the methodology and wire code `verifyReceipt` and `verifyWebhook` run. The page is a web app of its own origin (a second port; the API
 * allows it through CORS_ORIGINS) over plain http, with WebCrypto removed before the bundle loads, so nothing in it
 * leans on `crypto` either. In the page: `PegClient` reads `/v1/assets`,
 * `PegStream` with the browser's own WebSocket receives USDC's transition to DEPEG, `verifyReceipt` re-derives its
 * receipt, and `verifyWebhook` accepts a delivery the service's signing code signed and refuses it tampered.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type * as PegClientLib from "@peg-oracle/client";
import { browserBundle } from "../../packages/client/scripts/build-browser.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { generateSigningKey, signDelivery } from "../../src/delivery/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { launchChromium } from "../support/chromium.ts";

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-browser-client-"));
let running: TestService;
let browser: Browser;
let base: string;
let bundle: string;
/** The page's own origin (another port than the API: the API answers it through CORS, as it would any web app). */
let app: string;
let appServer: Server;

const PAGE =
  "<!doctype html><title>client</title>" +
  // No WebCrypto (as on a plain-http page of a non-local address), before anything of the bundle runs.
  '<script>Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });</script>' +
  '<script type="module">import * as lib from "/client.js"; globalThis.pegClient = lib;</script>';

/** USDC at par for 100 scenario seconds, then at 0.99: DEPEG after the 30 s entry dwell (about 13 s in at 10x). */
function writeScenario(): string {
  // Recent: the service accepts samples only so many days back from the wall clock (HISTORY_RAW_DAYS).
  const t0 = Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000;
  const lines = ["# title: USDC to DEPEG for the client's browser test"];
  for (let s = 0; s <= 400; s += 5) {
    lines.push(JSON.stringify({ ts: new Date(t0 + s * 1000).toISOString(), asset: "USDC", intrinsic_usd: "1", market_usd: s < 100 ? "1" : "0.99" }));
  }
  const path = join(dir, "usdc-to-depeg.jsonl");
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

beforeAll(async () => {
  bundle = await browserBundle();
  appServer = createServer((req, res) => {
    if (req.url === "/client.js") res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    else res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
  });
  await new Promise<void>((r) => appServer.listen(0, "127.0.0.1", r));
  app = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`;
  running = await startTestService({
    env: {
      FEED: `scenario:${writeScenario()}`,
      SCENARIO_SPEED: "10",
      CORS_ORIGINS: app,
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
  await new Promise((r) => appServer?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe("the client library in chromium", () => {
  it("bundles for the browser without a Node built-in", async () => {
    // esbuild refuses `node:` imports on the browser platform; a bare `Buffer` or `process` would survive the build,
    // so look for them in the output too.
    expect(bundle.length).toBeGreaterThan(10_000);
    expect(bundle).not.toMatch(/\bfrom\s*["']node:|require\(["']node:|\bBuffer\.from\(|\bprocess\.env\b/);
    await expect(
      build({ stdin: { contents: 'import "node:crypto";', resolveDir: process.cwd() }, bundle: true, platform: "browser", write: false, logLevel: "silent" }),
    ).rejects.toThrow();
  });

  it("reads the API, follows the stream, verifies the receipt and a webhook delivery, with no WebCrypto", async () => {
    const key = generateSigningKey(Date.now());
    const body = JSON.stringify({ asset: "USDC", to_state: "DEPEG" });
    const headers = signDelivery({ eventId: randomUUID(), deliveryId: randomUUID(), attempt: 1, timestamp: Math.floor(Date.now() / 1000), body, key });
    const keys = [{ kid: key.kid, public_key: key.public_key }];

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${app}/`);
    await page.waitForFunction(() => "pegClient" in globalThis);
    const result = await page.evaluate(
      async ({ base, headers, body, keys }) => {
        const lib = (globalThis as unknown as { pegClient: typeof PegClientLib }).pegClient;
        const client = new lib.PegClient({ baseUrl: base });
        const assets = await client.get("/v1/assets");
        const stream = new lib.PegStream({ url: base, assets: ["USDC"], sinceSeq: 0, heartbeatTimeoutMs: 20_000 });
        // For a failure's message: what the stream went through.
        const log: string[] = [];
        stream.on("disconnect", (d) => log.push(`disconnect ${d.code} ${d.reason}`));
        stream.on("error", (e) => log.push(`error ${e.code} ${e.message}`));
        stream.on("status", (s) => log.push(`status ${s.status}`));
        const transition = await new Promise<PegClientLib.TransitionMessage>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no transition within 60 s (status ${stream.status}): ${log.slice(0, 20).join("; ")}`)), 60_000);
          stream.on("transition", (t) => {
            clearTimeout(timer);
            resolve(t);
          });
        });
        let replay = await client.get("/v1/audit/{id}/replay-bundle", { params: { path: { id: transition.alert_id } } });
        for (let i = 0; i < 30 && !("schema_version" in replay); i++) {
          await new Promise((r) => setTimeout(r, 500));
          replay = await client.get("/v1/audit/{id}/replay-bundle", { params: { path: { id: transition.alert_id } } });
        }
        const receipt = lib.verifyReceipt(replay);
        const tampered = lib.verifyReceipt({ ...replay, expected_receipt_sha256: "0".repeat(64) });
        const hook = lib.verifyWebhook(headers, body, keys, Date.now());
        const forged = lib.verifyWebhook(headers, body.replace("DEPEG", "PEGGED"), keys, Date.now());
        stream.close();
        return {
          crypto: typeof globalThis.crypto,
          assets: assets.count,
          transition: { asset: transition.asset, to: transition.to_state, bps: lib.parseDecimal(transition.discount).times(10_000).toDecimalPlaces(0).toFixed() },
          receipt: { ok: receipt.ok, verdict: receipt.verdict },
          tampered: tampered.verdict,
          hook: hook.ok,
          forged: forged.ok ? "ok" : forged.reason,
          status: stream.status,
        };
      },
      { base, headers, body, keys },
    );
    expect(errors).toEqual([]);
    expect(result).toEqual({
      crypto: "undefined",
      assets: catalog.active.length,
      transition: { asset: "USDC", to: "DEPEG", bps: expect.stringMatching(/^\d+$/) as unknown as string },
      receipt: { ok: true, verdict: "PASS" },
      tampered: "FAIL",
      hook: true,
      forged: "bad_signature",
      status: "closed",
    });
  }, 120_000);
});
