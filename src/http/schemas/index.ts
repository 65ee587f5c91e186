/** Response, error and parameter schemas of the public HTTP API; the OpenAPI document is generated from them. */
export * from "./common.ts";
export * from "./assets.ts";
export * from "./feeds.ts";
export * from "./audit.ts";
export * from "./meta.ts";
export * from "./query.ts";
export * from "./machines.ts";
export * from "./me.ts";
export * from "./advisory.ts";
