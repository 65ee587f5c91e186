/**
 * The client's committed browser module (packages/client/browser/peg-client.js, what the dashboard loads) is up to
 * date: building it again from the package's sources gives the committed file byte for byte. When this fails, the
 * package, the methodology or wire code it runs, one of its runtime packages or esbuild changed: run
 * `npm run client:browser` and commit the result.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BUNDLE_FILE, browserBundle } from "../../packages/client/scripts/build-browser.ts";

describe("packages/client/browser/peg-client.js", () => {
  it("is what esbuild builds from the package's current sources", async () => {
    const committed = readFileSync(BUNDLE_FILE, "utf8");
    const fresh = await browserBundle();
    expect(fresh.length, "the browser module is stale: run `npm run client:browser`").toBe(committed.length);
    expect(fresh === committed, "the browser module is stale: run `npm run client:browser`").toBe(true);
  });

  it("is one self-contained ES module exporting the package's names, with no Node built-in", async () => {
    const committed = readFileSync(BUNDLE_FILE, "utf8");
    // No import statement (minified: `import{x}from"y"` or `import"y"`), no dynamic import, nothing of Node.
    expect(committed).not.toMatch(/(^|[;}])\s*import\s*[{*"'\w]|\}from"|\bimport\s*\(|\brequire\(|\bBuffer\.|\bprocess\.env\b/);
    const lib = (await import(BUNDLE_FILE)) as Record<string, unknown>;
    const source = (await import("@peg-oracle/client")) as Record<string, unknown>;
    expect(Object.keys(lib).sort()).toEqual(Object.keys(source).sort());
    for (const name of ["PegStream", "PegClient", "verifyReceipt", "verifyWebhook", "parseDecimal", "ApiError"]) expect(typeof lib[name], name).toBe("function");
  });
});
