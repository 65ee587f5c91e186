/**
 * The dashboard's static files (public/): loaded into memory at start, served by uWS ahead of the API pipeline with
 * a strong ETag (If-None-Match -> 304), a strict Content-Security-Policy (every script and style from this origin),
 * and the request id every response carries. Only a fixed set of pages and a flat /static/ directory are served;
 * no path ever reaches the file system after start.
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import type { HandledResult } from "./pipeline.ts";
import { ifNoneMatchHits } from "./routes/feeds.ts";

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

export interface StaticFile {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
  readonly cacheControl: string;
}

function load(path: string, cacheControl: string): StaticFile | null {
  const type = TYPES[extname(path)];
  if (type === undefined || path.endsWith(".d.ts") || !statSync(path).isFile()) return null;
  const body = readFileSync(path);
  return { body, contentType: type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`, cacheControl };
}

/** The servable files of `dir` by URL path (empty when the directory is absent). */
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
      const f = load(join(staticDir, name), "public, max-age=300, must-revalidate");
      if (f !== null) files.set(`/static/${name}`, f);
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
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };
  if (ifNoneMatchHits(ifNoneMatch, file.etag)) return { status: 304, headers };
  return { status: 200, headers, text: file.body, contentType: file.contentType };
}
