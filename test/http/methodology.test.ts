/**
 * The methodology lifecycle through configuration and routes: METHODOLOGY_REGISTRY (or the shipped registry) decides
 * the /v1/methodology/current body and the peg feed envelope's `methodology`; a bad registry file is a configuration
 * error naming the variable.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config.ts";
import { METHODOLOGY_VERSION, SHIPPED_REGISTRY, ownRelease, type MethodologyRelease } from "../../src/methodology/index.ts";
import { harness, RELEASED_AT } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "peg-registry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** Writes a registry file and returns its path. */
function registryFile(content: unknown): string {
  const path = join(dir, `registry-${n++}.json`);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

const own = (over: Partial<MethodologyRelease>): MethodologyRelease => ({ ...ownRelease(SHIPPED_REGISTRY), ...over });
const FIX = "docs/methodology-lifecycle.md#when-a-version-is-broken";

describe("the shipped registry", () => {
  it("/v1/methodology/current reports 1.0.0 active from src/methodology/registry.json, and the feed envelope carries its version", async () => {
    const h = harness();
    const body = (await h.get("/v1/methodology/current")).body;
    expect(body).toEqual({
      version: METHODOLOGY_VERSION,
      status: "active",
      git_tag: `methodology-v${METHODOLOGY_VERSION}`,
      released_at: RELEASED_AT,
      status_reason: null,
      superseded_by: null,
    });
    expect(((await h.get("/v1/peg/feed")).body as { methodology: string }).methodology).toBe(METHODOLOGY_VERSION);
  });
});

describe("METHODOLOGY_REGISTRY", () => {
  it("a deprecated entry is served with its reason and successor, without fix_url", async () => {
    const path = registryFile({
      versions: [own({ status: "deprecated", status_reason: "inputs change on 2026-12-01", superseded_by: "1.1.0" }), own({ version: "1.1.0", git_tag: "methodology-v1.1.0" })],
    });
    const h = harness({ env: { METHODOLOGY_REGISTRY: path } });
    const a = await h.get("/v1/methodology/current");
    expect(a.body).toEqual({
      version: "1.0.0",
      status: "deprecated",
      git_tag: "methodology-v1.0.0",
      released_at: RELEASED_AT,
      status_reason: "inputs change on 2026-12-01",
      superseded_by: "1.1.0",
    });
    // The envelope names the version this build implements, not the successor.
    const feed = (await h.get("/v1/peg/feed")).body as Record<string, unknown>;
    expect(Object.keys(feed)).toEqual(["ok", "generated_at", "count", "methodology", "data"]);
    expect(feed["methodology"]).toBe("1.0.0");
  });

  it("a broken entry is served with fix_url (the service itself refuses to start; the routes still describe it)", async () => {
    const path = registryFile({ versions: [own({ status: "broken", status_reason: "hash bug", superseded_by: null, fix_url: FIX })] });
    const h = harness({ env: { METHODOLOGY_REGISTRY: path } });
    expect((await h.get("/v1/methodology/current")).body).toMatchObject({ status: "broken", status_reason: "hash bug", superseded_by: null, fix_url: FIX });
  });

  it.each([
    ["a missing file", () => join(dir, "absent.json"), /cannot read the registry file: ENOENT/],
    ["a file that is not JSON", () => registryFile("{versions: oops"), /the registry file is not JSON/],
    ["an invalid registry", () => registryFile({ versions: [own({ status: "broken", status_reason: "bug" })] }), /fix_url: a broken version needs a link/],
    ["a registry without this build's version", () => registryFile({ versions: [own({ version: "2.0.0", git_tag: "methodology-v2.0.0" })] }), /does not list 1\.0\.0/],
  ] as const)("%s is a configuration error naming METHODOLOGY_REGISTRY", (_name, path, message) => {
    let err: unknown;
    try {
      parseConfig({ METHODOLOGY_REGISTRY: path() });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const issues = (err as ConfigError).issues;
    expect(issues.map((i) => i.name)).toEqual(["METHODOLOGY_REGISTRY"]);
    expect(issues[0]!.message).toMatch(message);
  });

  it("unset or blank: the shipped registry", () => {
    expect(parseConfig({}).methodology).toEqual(ownRelease(SHIPPED_REGISTRY));
    expect(parseConfig({ METHODOLOGY_REGISTRY: " " }).methodology).toEqual(ownRelease(SHIPPED_REGISTRY));
  });
});
