/**
 * The dashboard's static files (public/): loaded into memory at start, served by uWS ahead of the API pipeline with
 * a strong ETag (If-None-Match -> 304), a strict Content-Security-Policy (every script and style from this origin),
 * and the request id every response carries. Only a fixed set of pages, a flat /static/ directory and the
 * allow-listed package files under /static/vendor/ (static-vendor.ts) are served; no path ever reaches the file
 * system after start.
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import type { HandledResult } from "./pipeline.ts";
import { ifNoneMatchHits } from "./routes/feeds.ts";
import { vendorFilePaths } from "./static-vendor.ts";

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
};

/** Pages at fixed paths; everything else lives flat under /static/. */
const PAGES: Readonly<Record<string, string>> = { "/": "index.html", "/asset.html": "asset.html", "/receipt.html": "receipt.html" };

export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'";

const STATIC_CACHE_CONTROL = "public, max-age=300, must-revalidate";

export interface StaticFile {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
  readonly cacheControl: string;
  /** `CONTENT_SECURITY_POLICY`, plus the hashes of a page's inline import maps. */
  readonly contentSecurityPolicy: string;
}

/**
 * The policy of a page: CSP counts an inline `<script type="importmap">` as an inline script, so each one the page
 * carries is allowed by the SHA-256 of its exact text, and nothing else inline is.
 */
export function pagePolicy(html: string): string {
  const hashes = [...html.matchAll(/<script type="importmap">([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${createHash("sha256").update(m[1]!, "utf8").digest("base64")}'`,
  );
  return hashes.length === 0 ? CONTENT_SECURITY_POLICY : CONTENT_SECURITY_POLICY.replace("script-src 'self'", `script-src 'self' ${hashes.join(" ")}`);
}

function load(path: string, cacheControl: string): StaticFile | null {
  const type = TYPES[extname(path)];
  if (type === undefined || path.endsWith(".d.ts") || !statSync(path).isFile()) return null;
  const body = readFileSync(path);
  return {
    body,
    contentType: type,
    etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`,
    cacheControl,
    contentSecurityPolicy: type.startsWith("text/html") ? pagePolicy(body.toString("utf8")) : CONTENT_SECURITY_POLICY,
  };
}

/**
 * The servable files of `dir` by URL path (empty when the directory is absent), with the vendored package files
 * when it has a static/ directory (throws `VendorFileError` when one is missing).
 */
export function loadStaticFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(dir)) return files;
  for (const [path, name] of Object.entries(PAGES)) {
    const full = join(dir, name);
    if (!existsSync(full)) continue;
    const f = load(full, "no-cache");
    if (f !== null) files.set(path, f);
  }
  const staticDir = join(dir, "static");
  if (existsSync(staticDir)) {
    for (const name of readdirSync(staticDir).sort()) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) continue;
      const f = load(join(staticDir, name), STATIC_CACHE_CONTROL);
      if (f !== null) files.set(`/static/${name}`, f);
    }
    for (const [url, path] of vendorFilePaths()) {
      const f = load(path, STATIC_CACHE_CONTROL);
      if (f !== null) files.set(url, f);
    }
  }
  return files;
}

/** The answer to GET/HEAD of a static file, 304 when If-None-Match matches. */
export function staticResponse(file: StaticFile, ifNoneMatch: string | undefined): HandledResult {
  const headers: Record<string, string> = {
    "x-request-id": randomUUID(),
    etag: file.etag,
    "cache-control": file.cacheControl,
    "content-security-policy": file.contentSecurityPolicy,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  if (ifNoneMatchHits(ifNoneMatch, file.etag)) return { status: 304, headers };
  return { status: 200, headers, text: file.body, contentType: file.contentType };
}
