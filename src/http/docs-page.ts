/**
 * The interactive API reference at /docs: a static page that loads Swagger UI from the installed `swagger-ui-dist`
 * package (served under /docs/{file}, nothing from a CDN) and points it at /openapi.json. No inline script, so it
 * works under a strict Content-Security-Policy.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The files served under /docs/{file}, with their content types. Anything else is a 404. */
export const DOCS_ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

/** Our own initializer (instead of the package's, which points at a demo document). */
export const DOCS_INIT_FILE = "init.js";

export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function docsHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Peg-risk oracle API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="stylesheet" href="/docs/index.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="/docs/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/${DOCS_INIT_FILE}"></script>
</body>
</html>
`;
}

export function docsInitScript(specUrl = "/openapi.json"): string {
  return `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(specUrl)},
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    validatorUrl: null
  });
});
`;
}

let distDir: string | undefined;
const cache = new Map<string, Uint8Array>();

/** Directory of the installed swagger-ui-dist package. */
export function swaggerUiDistDir(): string {
  distDir ??= dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  return distDir;
}

/** One /docs asset: bytes and content type, or null for a file we do not serve. Read once, then cached. */
export function docsAsset(file: string): { readonly body: string | Uint8Array; readonly contentType: string } | null {
  if (file === DOCS_INIT_FILE) return { body: docsInitScript(), contentType: "text/javascript; charset=utf-8" };
  if (!Object.prototype.hasOwnProperty.call(DOCS_ASSETS, file)) return null;
  let body = cache.get(file);
  if (body === undefined) {
    body = new Uint8Array(readFileSync(join(swaggerUiDistDir(), file)));
    cache.set(file, body);
  }
  return { body, contentType: DOCS_ASSETS[file]! };
}
