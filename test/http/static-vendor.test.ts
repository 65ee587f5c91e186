/**
 * The package files the dashboard imports (src/http/static-vendor.ts), served from node_modules at /static/vendor/:
 * exactly the allow-listed files, byte for byte, as JavaScript with the caching of the rest of /static/, closed under
 * their relative imports; every other path under /static/vendor/ (other files of the same packages, type
 * declarations, directories, traversal in any spelling) is refused. Served over real sockets by uWS with the static
 * handlers ahead of a pipeline catch-all, as src/http/server.ts wires them.
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
    expect(paths.get("/static/vendor/canonicalize.js")).toBe(fileURLToPath(import.meta.resolve("canonicalize")));
    expect(paths.get("/static/vendor/noble-hashes/sha2.js")).toBe(fileURLToPath(import.meta.resolve("@noble/hashes/sha2.js")));
    const appCss = files.get("/static/app.css")!;
    for (const [url, path] of paths) {
      expect(path, url).toMatch(/\/node_modules\/(canonicalize|@noble\/hashes)\//);
      const f = files.get(url)!;
      expect(f.body.equals(readFileSync(path)), url).toBe(true);
      expect(f.contentType, url).toBe("text/javascript; charset=utf-8");
      expect(f.cacheControl, url).toBe(appCss.cacheControl);
      expect(f.contentSecurityPolicy, url).toBe(CONTENT_SECURITY_POLICY);
    }
  });

  it("is closed under the files' own imports: every import is relative and lands on a listed file", () => {
    let seen = 0;
    for (const url of vendorUrls) {
      const src = files.get(url)!.body.toString("utf8");
      const specifiers = [...src.matchAll(/^\s*(?:import|export)\s[^;]*?from\s*["']([^"']+)["']/gm), ...src.matchAll(/^\s*import\s*["']([^"']+)["']/gm)].map(
        (m) => m[1]!,
      );
      expect(src, url).not.toMatch(/\bimport\s*\(/); // no dynamic imports to chase
      for (const s of specifiers) {
        expect(s, `${url} imports ${s}`).toMatch(/^\.\.?\//);
        expect(vendorUrls, `${url} imports ${s}`).toContain(new URL(s, `http://x${url}`).pathname);
        seen++;
      }
    }
    expect(seen).toBeGreaterThanOrEqual(5); // sha2.js and _md.js import their siblings
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
    "/static/vendor/noble-hashes/sha3.js",
    "/static/vendor/noble-hashes/index.js",
    "/static/vendor/noble-hashes/hmac.js",
    "/static/vendor/noble-hashes/sha2.d.ts",
    "/static/vendor/noble-hashes/package.json",
    "/static/vendor/noble-hashes/src/sha2.ts",
    "/static/vendor/canonicalize.d.ts",
    "/static/vendor/canonicalize/lib/canonicalize.js",
    "/static/vendor/lib/canonicalize.js",
    "/static/vendor/package.json",
    "/static/vendor/",
    "/static/vendor",
    "/static/vendor/noble-hashes/",
    "/static/vendor/canonicalize.js/",
    "/static/vendor//canonicalize.js",
    "/static/vendor/noble-hashes/../canonicalize.js",
    "/static/vendor/noble-hashes/../../../package.json",
    "/static/vendor/%2e%2e/%2e%2e/package.json",
    "/static/vendor/noble-hashes/%2e%2e/%2e%2e/%2e%2e/node_modules/jose/package.json",
    "/static/vendor/noble-hashes/..%2f..%2f..%2fpackage.json",
    "/static/vendor/noble-hashes/sha2%2ejs",
    "/static/vendor/NOBLE-HASHES/sha2.js",
    "/node_modules/canonicalize/lib/canonicalize.js",
    "/node_modules/@noble/hashes/sha2.js",
    "/static/../node_modules/canonicalize/lib/canonicalize.js",
  ])("refuses %s", async (path) => {
    const res = await rawGet(path);
    expect(res.status, path).toBe(404);
    expect(JSON.parse(res.body.toString("utf8"))).toMatchObject({ error: "not_found" });
  });
});

describe("the receipt page's import map", () => {
  const html = readFileSync(new URL("../../public/receipt.html", import.meta.url), "utf8");
  const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html)![1]!;

  it("is allowed by its page's CSP (by hash) and by no other page's", async () => {
    const hash = `'sha256-${createHash("sha256").update(map, "utf8").digest("base64")}'`;
    const page = await rawGet("/receipt.html");
    expect(page.headers["content-security-policy"]).toBe(CONTENT_SECURITY_POLICY.replace("script-src 'self'", `script-src 'self' ${hash}`));
    expect(pagePolicy(html)).toBe(page.headers["content-security-policy"]);
    for (const other of ["/", "/asset.html", "/static/receipt.js"]) {
      expect((await rawGet(other)).headers["content-security-policy"], other).toBe(CONTENT_SECURITY_POLICY);
    }
  });

  it("maps each bare specifier to the served file Node resolves it to", () => {
    const { imports } = JSON.parse(map) as { imports: Record<string, string> };
    const paths = vendorFilePaths();
    for (const [specifier, url] of Object.entries(imports)) {
      expect(paths.get(url), `${specifier} -> ${url}`).toBe(fileURLToPath(import.meta.resolve(specifier)));
    }
  });
});
