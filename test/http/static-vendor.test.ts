/**
 * The package files the dashboard imports (src/http/static-vendor.ts), served from node_modules at /static/vendor/:
 * exactly the allow-listed files (the client package's committed browser module), byte for byte, as JavaScript with
 * the caching of the rest of /static/, self-contained; every other path under /static/vendor/ (the package's other
 * files, its sources, the packages it bundles, directories, traversal in any spelling) is refused. Served over real
 * sockets by uWS with the static handlers ahead of a pipeline catch-all, as src/http/server.ts wires them; each page's
 * import map is allowed by its own hash.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { CONTENT_SECURITY_POLICY, loadStaticFiles, pagePolicy } from "../../src/http/static.ts";
import { attachStatic } from "../../src/http/static-uws.ts";
import { VENDOR_FILES, vendorFilePaths } from "../../src/http/static-vendor.ts";
import { BUNDLE_FILE } from "../../packages/client/scripts/build-browser.ts";
import { serveUws, type UwsServer } from "../../src/http/uws-adapter.ts";

const PUBLIC = fileURLToPath(new URL("../../public/", import.meta.url));
const files = loadStaticFiles(PUBLIC);
const vendorUrls = VENDOR_FILES.map(([url]) => url);

let server: UwsServer;
let port: number;

beforeAll(async () => {
  const handle = createPipeline({ router: new Router([]), clock: new SimulatedClock(0), ratePerMinute: 1000, corsOrigins: [] });
  server = await serveUws(handle, { host: "127.0.0.1", port: 0, trustProxy: false, configure: (app) => attachStatic(app, files) });
  port = server.port;
});
afterAll(() => server?.close());

interface Raw {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** A GET with the path sent exactly as written (fetch would normalise `..` and `%2e` before sending). */
function rawGet(path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method: "GET", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the vendor allow-list", () => {
  it("loads exactly the listed files under /static/vendor/, from node_modules, as JavaScript cached like /static/", () => {
    expect([...files.keys()].filter((p) => p.startsWith("/static/vendor/")).sort()).toEqual([...vendorUrls].sort());
    const paths = vendorFilePaths();
    expect([...paths.keys()]).toEqual(["/static/vendor/peg-client.js"]);
    expect(paths.get("/static/vendor/peg-client.js")).toBe(BUNDLE_FILE);
    const appCss = files.get("/static/app.css")!;
    for (const [url, path] of paths) {
      expect(path, url).toMatch(/\/packages\/client\/browser\/peg-client\.js$/);
      const f = files.get(url)!;
      expect(f.body.equals(readFileSync(path)), url).toBe(true);
      expect(f.contentType, url).toBe("text/javascript; charset=utf-8");
      expect(f.cacheControl, url).toBe(appCss.cacheControl);
      expect(f.contentSecurityPolicy, url).toBe(CONTENT_SECURITY_POLICY);
    }
  });

  it("is self-contained: no file imports anything (the browser module bundles what it needs)", () => {
    for (const url of vendorUrls) {
      const src = files.get(url)!.body.toString("utf8");
      expect(src, url).not.toMatch(/(^|[;}])\s*import\s*[{*"'\w]|\}from"|\bimport\s*\(/);
      expect(src, url).toMatch(/export\s*\{/);
    }
  });
});

describe("GET /static/vendor/*", () => {
  it("serves every listed file with its content type, caching headers, ETag (304) and the CSP", async () => {
    for (const url of vendorUrls) {
      const res = await rawGet(url);
      expect(res.status, url).toBe(200);
      expect(res.headers["content-type"], url).toBe("text/javascript; charset=utf-8");
      expect(res.headers["cache-control"], url).toBe("public, max-age=300, must-revalidate");
      expect(res.headers["x-content-type-options"], url).toBe("nosniff");
      expect(res.headers["content-security-policy"], url).toBe(CONTENT_SECURITY_POLICY);
      expect(res.body.equals(files.get(url)!.body), url).toBe(true);
      const again = await rawGet(url, { "if-none-match": String(res.headers["etag"]) });
      expect(again.status, url).toBe(304);
    }
  });

  it.each([
    "/static/vendor/canonicalize.js",
    "/static/vendor/noble-hashes/sha2.js",
    "/static/vendor/peg-client.ts",
    "/static/vendor/index.ts",
    "/static/vendor/src/index.ts",
    "/static/vendor/browser/peg-client.js",
    "/static/vendor/package.json",
    "/static/vendor/",
    "/static/vendor",
    "/static/vendor/peg-client.js/",
    "/static/vendor//peg-client.js",
    "/static/vendor/x/../peg-client.js/..",
    "/static/vendor/../../package.json",
    "/static/vendor/%2e%2e/%2e%2e/package.json",
    "/static/vendor/%2e%2e/%2e%2e/node_modules/jose/package.json",
    "/static/vendor/..%2f..%2fpackage.json",
    "/static/vendor/peg-client%2ejs",
    "/static/vendor/PEG-CLIENT.js",
    "/node_modules/@peg-oracle/client/browser/peg-client.js",
    "/packages/client/browser/peg-client.js",
    "/static/../packages/client/browser/peg-client.js",
  ])("refuses %s", async (path) => {
    const res = await rawGet(path);
    expect(res.status, path).toBe(404);
    expect(JSON.parse(res.body.toString("utf8"))).toMatchObject({ error: "not_found" });
  });
});

describe("the pages' import maps", () => {
  const pages = { "/": "index.html", "/asset.html": "asset.html", "/receipt.html": "receipt.html" };
  const mapOf = (page: string): string => /<script type="importmap">([\s\S]*?)<\/script>/.exec(readFileSync(new URL(`../../public/${page}`, import.meta.url), "utf8"))![1]!;

  it("are each allowed by their page's CSP (by hash), and nothing inline is allowed elsewhere", async () => {
    for (const [path, page] of Object.entries(pages)) {
      const hash = `'sha256-${createHash("sha256").update(mapOf(page), "utf8").digest("base64")}'`;
      const res = await rawGet(path);
      expect(res.headers["content-security-policy"], path).toBe(CONTENT_SECURITY_POLICY.replace("script-src 'self'", `script-src 'self' ${hash}`));
      expect(pagePolicy(readFileSync(new URL(`../../public/${page}`, import.meta.url), "utf8")), path).toBe(res.headers["content-security-policy"]);
    }
    for (const other of ["/static/receipt.js", "/static/ws.js", "/static/vendor/peg-client.js"]) {
      expect((await rawGet(other)).headers["content-security-policy"], other).toBe(CONTENT_SECURITY_POLICY);
    }
  });

  it("map the client package to its browser module, which sits beside the entry Node resolves", () => {
    const paths = vendorFilePaths();
    for (const page of Object.values(pages)) {
      const { imports } = JSON.parse(mapOf(page)) as { imports: Record<string, string> };
      expect(Object.keys(imports), page).toEqual(["@peg-oracle/client"]);
      const served = paths.get(imports["@peg-oracle/client"]!);
      expect(served, page).toBe(BUNDLE_FILE);
      expect(served, page).toBe(fileURLToPath(new URL("../browser/peg-client.js", import.meta.resolve("@peg-oracle/client"))));
    }
  });
});
