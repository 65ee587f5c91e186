/**
 * The client's generated REST types are up to date: regenerating them from the OpenAPI document the service builds
 * gives the committed file byte for byte. When this fails, the API changed: run `npm run client:generate` and commit
 * the result (the typecheck then shows which client code and examples the change breaks).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SCHEMA_FILE, schemaSource, servedOpenApiDocument } from "../../packages/client/scripts/generate-schema.ts";

describe("packages/client/src/generated/schema.ts", () => {
  it("is what openapi-typescript generates from the current OpenAPI document", async () => {
    const committed = readFileSync(SCHEMA_FILE, "utf8");
    const fresh = await schemaSource();
    // Compare line counts first for a readable failure, then the bytes.
    expect(fresh.split("\n").length, "the generated types are stale: run `npm run client:generate`").toBe(committed.split("\n").length);
    expect(fresh === committed, "the generated types are stale: run `npm run client:generate`").toBe(true);
  });

  it("fails when the document changes (a new operation is a new path in the types)", async () => {
    const doc = servedOpenApiDocument();
    const paths = doc["paths"] as Record<string, unknown>;
    paths["/v1/brand-new"] = { get: { operationId: "getBrandNew", responses: { 200: { description: "OK", content: { "application/json": { schema: { type: "string" } } } } } } };
    const changed = await schemaSource(doc);
    expect(changed).not.toBe(readFileSync(SCHEMA_FILE, "utf8"));
    expect(changed).toContain('"/v1/brand-new"');
  });
});
