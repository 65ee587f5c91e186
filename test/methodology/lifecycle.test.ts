/**
 * The methodology lifecycle registry (src/methodology/lifecycle.ts): the shipped registry, every validation rule, the
 * fix_url form, the start-up verdicts, and that every anchor the code and the registry point at exists in
 * docs/methodology-lifecycle.md.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  LIFECYCLE_DOC,
  METHODOLOGY_VERSION,
  MethodologyRegistryError,
  SHIPPED_REGISTRY,
  compareVersions,
  lifecycleAnchor,
  ownRelease,
  parseRegistry,
  parseRelease,
  releaseOf,
  startupVerdict,
  type MethodologyRelease,
} from "../../src/methodology/index.ts";

const DOC = readFileSync(new URL(`../../${LIFECYCLE_DOC}`, import.meta.url), "utf8");
const SHIPPED_JSON: unknown = JSON.parse(readFileSync(new URL("../../src/methodology/registry.json", import.meta.url), "utf8"));

/** GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces to -. */
function docAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (m) anchors.add(m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-"));
  }
  return anchors;
}
const ANCHORS = docAnchors(DOC);

const base: MethodologyRelease = {
  version: "1.0.0",
  status: "active",
  git_tag: "methodology-v1.0.0",
  released_at: "2026-07-24T00:00:00.000Z",
  status_reason: null,
  superseded_by: null,
  fix_url: null,
};
const FIX = "docs/methodology-lifecycle.md#when-a-version-is-broken";
const rel = (over: Partial<MethodologyRelease>): MethodologyRelease => ({ ...base, ...over, git_tag: `methodology-v${over.version ?? base.version}` });

/** The problems parseRegistry reports for `input` (fails the test when it accepts it). */
function problems(input: unknown): readonly string[] {
  try {
    parseRegistry(input);
  } catch (e) {
    expect(e).toBeInstanceOf(MethodologyRegistryError);
    expect((e as MethodologyRegistryError).code).toBe("invalid_methodology_registry");
    return (e as MethodologyRegistryError).problems;
  }
  throw new Error(`accepted: ${JSON.stringify(input)}`);
}

describe("the shipped registry", () => {
  it("lists this build's version, active, with every field", () => {
    expect(parseRegistry(SHIPPED_JSON)).toEqual(SHIPPED_REGISTRY);
    expect(ownRelease(SHIPPED_REGISTRY)).toEqual({ ...base, version: METHODOLOGY_VERSION, git_tag: `methodology-v${METHODOLOGY_VERSION}` });
    expect(Object.isFrozen(SHIPPED_REGISTRY.versions[0])).toBe(true);
  });

  it("every fix_url of the shipped registry, and every anchor the start-up messages name, is a section of the lifecycle doc", () => {
    for (const r of SHIPPED_REGISTRY.versions) if (r.fix_url !== null) expect(ANCHORS).toContain(lifecycleAnchor(r.fix_url));
    for (const a of ["deprecated", "broken", "when-a-version-is-broken", "when-a-version-is-deprecated", "incidents", "the-registry"]) {
      expect(ANCHORS, a).toContain(a);
    }
    expect(startupVerdict(rel({ status: "deprecated", status_reason: "r" }))).toMatchObject({ message: expect.stringContaining(`${LIFECYCLE_DOC}#deprecated`) });
  });
});

describe("parseRegistry", () => {
  it("accepts a lifecycle history: broken, deprecated, active, and another major", () => {
    const reg = parseRegistry({
      $comment: "history",
      versions: [
        rel({ status: "broken", status_reason: "receipt hash omitted the catalog entry", superseded_by: "1.0.2", fix_url: FIX }),
        rel({ version: "1.0.1", status: "broken", status_reason: "same defect, half fixed", superseded_by: "1.0.2", fix_url: `https://example.com/peg-oracle/docs/methodology-lifecycle.md#incidents` }),
        rel({ version: "1.0.2", status: "deprecated", status_reason: "superseded by 1.1.0", superseded_by: "1.1.0" }),
        rel({ version: "1.1.0" }),
        rel({ version: "2.0.0" }),
      ],
    });
    expect(reg.versions.map((r) => `${r.version}:${r.status}`)).toEqual(["1.0.0:broken", "1.0.1:broken", "1.0.2:deprecated", "1.1.0:active", "2.0.0:active"]);
    expect(releaseOf(reg, "1.0.2")?.superseded_by).toBe("1.1.0");
    expect(releaseOf(reg, "9.9.9")).toBeUndefined();
  });

  it("refuses what is not a registry", () => {
    for (const bad of [null, [], "x", 1, { versions: [] }, { versions: {} }, {}]) {
      expect(() => parseRegistry(bad), JSON.stringify(bad)).toThrow(MethodologyRegistryError);
    }
    expect(problems({ versions: [base], extra: 1 })).toEqual(["unknown field(s) extra"]);
  });

  it("checks each field of an entry and reports every problem at once", () => {
    const p = problems({
      versions: [
        { version: "1.0", status: "retired", git_tag: "v1", released_at: "2026-07-24", status_reason: null, superseded_by: null, fix_url: null, note: "x" },
      ],
    });
    expect(p).toEqual([
      "versions[0]: unknown field(s) note",
      'versions[0].version: expected a dotted MAJOR.MINOR.PATCH version, got "1.0"',
      'versions[0].status: expected one of active, deprecated, broken, got "retired"',
      'versions[0].released_at: expected an RFC 3339 UTC timestamp with milliseconds and Z, got "2026-07-24"',
      "versions[0].status_reason: a retired version needs a reason (1-500 characters)",
    ]);
    const { fix_url: _dropped, ...missing } = base;
    expect(problems({ versions: [missing] })).toEqual(["versions[0].fix_url: missing (write null when it does not apply)", "versions[0].fix_url: only a broken version has one (write null)"]);
  });

  it.each([
    ["a git tag of another version", { git_tag: "methodology-v1.0.1" }, 'versions[0].git_tag: expected "methodology-v1.0.0", got "methodology-v1.0.1"'],
    ["a released_at with an offset", { released_at: "2026-07-24T02:00:00.000+02:00" }, "released_at"],
    ["a released_at without milliseconds", { released_at: "2026-07-24T00:00:00Z" }, "released_at"],
    ["an active version with a reason", { status_reason: "why" }, "status_reason: must be null while the version is active"],
    ["an active version that is superseded", { superseded_by: "1.0.1" }, "an active version is not superseded"],
    ["a deprecated version without a reason", { status: "deprecated" }, "a deprecated version needs a reason"],
    ["a blank reason", { status: "deprecated", status_reason: "  " }, "a deprecated version needs a reason"],
    ["a reason over 500 characters", { status: "deprecated", status_reason: "x".repeat(501) }, "a deprecated version needs a reason"],
    ["a broken version without fix_url", { status: "broken", status_reason: "bug" }, "a broken version needs a link"],
    ["a fix_url outside the lifecycle doc", { status: "broken", status_reason: "bug", fix_url: "docs/lifecycle.md#start" }, "a broken version needs a link"],
    ["a fix_url without an anchor", { status: "broken", status_reason: "bug", fix_url: "docs/methodology-lifecycle.md" }, "a broken version needs a link"],
    ["an http fix_url", { status: "broken", status_reason: "bug", fix_url: "http://example.com/methodology-lifecycle.md#broken" }, "a broken version needs a link"],
    ["a fix_url on a deprecated version", { status: "deprecated", status_reason: "old", fix_url: FIX }, "only a broken version has one"],
    ["a malformed superseded_by", { status: "deprecated", status_reason: "old", superseded_by: "next" }, "superseded_by: expected null or a dotted version"],
  ] as const)("refuses %s", (_name, over, expected) => {
    const p = problems({ versions: [{ ...base, ...over }] });
    expect(p.join("\n")).toContain(expected);
  });

  it("checks the entries against each other: duplicates, one active per major, superseded_by", () => {
    expect(problems({ versions: [base, base] })).toContain("version 1.0.0 is listed twice");
    expect(problems({ versions: [base, rel({ version: "1.2.0" })] })).toEqual(["major 1 has 2 active versions (1.0.0, 1.2.0); at most one may be active"]);
    const dep = (superseded_by: string) => rel({ status: "deprecated", status_reason: "old", superseded_by });
    expect(problems({ versions: [dep("1.0.1")] })).toEqual(["1.0.0.superseded_by: 1.0.1 is not in the registry"]);
    expect(problems({ versions: [dep("1.0.0")] })).toEqual(["1.0.0.superseded_by: 1.0.0 is not newer than 1.0.0"]);
    expect(problems({ versions: [rel({ version: "0.9.0" }), dep("0.9.0")] })).toEqual(["1.0.0.superseded_by: 0.9.0 is not newer than 1.0.0"]);
    expect(problems({ versions: [dep("1.0.1"), rel({ version: "1.0.1", status: "broken", status_reason: "bug", fix_url: FIX })] })).toEqual([
      "1.0.0.superseded_by: 1.0.1 is broken; point at a version that is not",
    ]);
  });

  it("ownRelease needs this build's version in the registry", () => {
    const other = parseRegistry({ versions: [rel({ version: "2.0.0" })] });
    expect(() => ownRelease(other)).toThrow(`the registry does not list ${METHODOLOGY_VERSION}`);
  });

  it("parseRelease checks one entry on its own", () => {
    expect(parseRelease(base)).toEqual(base);
    expect(() => parseRelease({ ...base, status: "broken", status_reason: "bug" })).toThrow(MethodologyRegistryError);
  });
});

describe("helpers", () => {
  it("compareVersions is numeric, not lexical", () => {
    expect(compareVersions("1.10.0", "1.9.0")).toBeGreaterThan(0);
    expect(compareVersions("1.0.9", "1.0.10")).toBeLessThan(0);
    expect(compareVersions("2.0.0", "2.0.0")).toBe(0);
  });

  it("lifecycleAnchor accepts the repository path and https URLs of the lifecycle doc only", () => {
    expect(lifecycleAnchor(FIX)).toBe("when-a-version-is-broken");
    expect(lifecycleAnchor("https://docs.example.com/methodology-lifecycle#broken")).toBe("broken");
    expect(lifecycleAnchor("https://docs.example.com/a/methodology-lifecycle.html#incidents")).toBe("incidents");
    for (const bad of [
      "docs/methodology-lifecycle.md#",
      "docs/methodology-lifecycle.md#Has Spaces",
      "/docs/methodology-lifecycle.md#broken",
      "https://docs.example.com/methodology-lifecycle.md?x=1#broken",
      "https://user:pw@docs.example.com/methodology-lifecycle.md#broken",
      "https://docs.example.com/other.md#broken",
      "ftp://docs.example.com/methodology-lifecycle.md#broken",
    ]) {
      expect(lifecycleAnchor(bad), bad).toBeNull();
    }
  });
});

describe("startupVerdict", () => {
  it("serves an active version, warns for a deprecated one, refuses a broken one naming fix_url", () => {
    expect(startupVerdict(base)).toEqual({ kind: "serve" });
    expect(startupVerdict(rel({ status: "deprecated", status_reason: "inputs change", superseded_by: "1.1.0" }))).toEqual({
      kind: "warn",
      message: "methodology 1.0.0 is deprecated (inputs change); superseded by 1.1.0; plan the upgrade: docs/methodology-lifecycle.md#deprecated",
    });
    const refused = startupVerdict(rel({ status: "broken", status_reason: "hash bug", superseded_by: "1.0.1", fix_url: FIX }));
    expect(refused).toEqual({
      kind: "refuse",
      fix_url: FIX,
      message: `methodology 1.0.0 is broken (hash bug); superseded by 1.0.1: this build must not serve. Refusing to start; what to do: ${FIX}`,
    });
  });
});
