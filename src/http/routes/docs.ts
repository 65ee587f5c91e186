/** GET /openapi.json, GET /docs and its Swagger UI assets (served from the installed swagger-ui-dist package). */
import { DOCS_ASSETS, DOCS_CSP, DOCS_INIT_FILE, docsAsset, docsHtml } from "../docs-page.ts";
import { notFound } from "../errors.ts";
import { OpenApiDocumentSchema, PathParams } from "../schemas/index.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

/** `document` is called on the first request (the route list is complete by then) and its result reused. */
export function docsRoutes(document: () => object): DocumentedRoute[] {
  let html: string | undefined;
  return [
    {
      method: "GET",
      path: "/openapi.json",
      handler: () => jsonResult(200, document(), { "cache-control": "public, max-age=300" }),
      spec: {
        summary: "This interface description",
        description: "OpenAPI 3.1, interface version 1.0.0, generated from the same schemas the handlers serve.",
        tags: ["docs"],
        responses: { 200: OpenApiDocumentSchema },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/docs",
      handler: () => ({
        status: 200,
        text: (html ??= docsHtml()),
        contentType: "text/html; charset=utf-8",
        headers: { "content-security-policy": DOCS_CSP, "cache-control": "public, max-age=300" },
      }),
      spec: {
        summary: "Interactive API reference",
        description: "A Swagger UI page over /openapi.json; every asset is served by this service under /docs/{file}.",
        tags: ["docs"],
        responses: { 200: { schema: null, contentType: "text/html", description: "The reference page." } },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/docs/{file}",
      handler: (req) => {
        const file = req.params["file"] ?? "";
        const asset = docsAsset(file);
        if (asset === null) throw notFound(`no documentation asset "${file.slice(0, 64)}"`);
        return { status: 200, text: asset.body, contentType: asset.contentType, headers: { "cache-control": "public, max-age=86400" } };
      },
      spec: {
        summary: "Swagger UI asset",
        description: `One of ${[...Object.keys(DOCS_ASSETS), DOCS_INIT_FILE].join(", ")}, from the installed swagger-ui-dist package.`,
        tags: ["docs"],
        params: { file: PathParams.file },
        responses: { 200: { schema: null, contentType: ["text/css", "text/javascript", "image/png"], description: "The asset." } },
        errors: ["not_found"],
      },
    },
  ];
}
