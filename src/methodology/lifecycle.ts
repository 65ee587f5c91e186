/**
 * Methodology lifecycle (interface 2.12 and 9.3; docs/methodology-lifecycle.md): the registry of released methodology
 * versions and their status, checked as data. Pure: whoever reads a registry file hands its parsed JSON to
 * `parseRegistry`; this module never touches the file system.
 *
 * The shipped registry is `registry.json` next to this module. An operator replaces it with a copy of the same shape
 * (`METHODOLOGY_REGISTRY`) to mark this build's version deprecated or broken without rebuilding.
 */
import { METHODOLOGY_VERSION } from "./constants.ts";
import shippedRegistryJson from "./registry.json" with { type: "json" };
import { parseTimestamp, timestampToWire } from "./time.ts";

export const METHODOLOGY_STATUSES = ["active", "deprecated", "broken"] as const;
/** `active`: serve it. `deprecated`: still correct, a successor exists or is coming; serve with a warning. `broken`: never serve. */
export type MethodologyStatus = (typeof METHODOLOGY_STATUSES)[number];

/** One released methodology version, as the registry lists it and `/v1/methodology/current` serves it (wire names). */
export interface MethodologyRelease {
  /** Dotted `MAJOR.MINOR.PATCH`, the version receipts declare as `methodology_version`. */
  readonly version: string;
  readonly status: MethodologyStatus;
  /** The release's git tag: always `methodology-v<version>`. */
  readonly git_tag: string;
  /** RFC 3339 UTC with milliseconds and `Z`. */
  readonly released_at: string;
  /** Why the version is deprecated or broken; null (and only null) while active. */
  readonly status_reason: string | null;
  /** The registry version that replaces this one (higher, not broken); null when there is none (yet). */
  readonly superseded_by: string | null;
  /** Broken versions only (null otherwise): the section of docs/methodology-lifecycle.md that says what to do. */
  readonly fix_url: string | null;
}

/** Every released version, in the registry file's order. */
export interface MethodologyRegistry {
  readonly versions: readonly MethodologyRelease[];
}

/** Where the lifecycle sections live; every `fix_url` points at an anchor of this document. */
export const LIFECYCLE_DOC = "docs/methodology-lifecycle.md";

export const METHODOLOGY_REGISTRY_ERROR_CODE = "invalid_methodology_registry";

/** A registry that fails validation, with every problem found (one per line of the message). */
export class MethodologyRegistryError extends Error {
  override readonly name = "MethodologyRegistryError";
  readonly code = METHODOLOGY_REGISTRY_ERROR_CODE;
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid methodology registry: ${problems.join("; ")}`);
    this.problems = Object.freeze([...problems]);
  }
}

const VERSION = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;
const ANCHOR = /^[a-z0-9][a-z0-9-]{0,99}$/;
const RELEASE_KEYS = ["version", "status", "git_tag", "released_at", "status_reason", "superseded_by", "fix_url"] as const;
const REGISTRY_KEYS = new Set(["$comment", "versions"]);
const MAX_REASON = 500;

/** Numeric comparison of two dotted versions (both valid): negative when `a` is older. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map((p) => Number.parseInt(p, 10));
  const pb = b.split(".").map((p) => Number.parseInt(p, 10));
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The anchor a `fix_url` points at, or null when it is not a link to a section of the lifecycle document. Accepted:
 * the repository path `docs/methodology-lifecycle.md#<anchor>`, or an https URL of that document (its path ending
 * in `/methodology-lifecycle.md`, `/methodology-lifecycle` or `/methodology-lifecycle.html`) with `#<anchor>`.
 */
export function lifecycleAnchor(fixUrl: string): string | null {
  const hash = fixUrl.indexOf("#");
  if (hash < 0) return null;
  const doc = fixUrl.slice(0, hash);
  const anchor = fixUrl.slice(hash + 1);
  if (!ANCHOR.test(anchor)) return null;
  if (doc === LIFECYCLE_DOC) return anchor;
  let url: URL;
  try {
    url = new URL(doc);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" || url.hostname === "" || url.username !== "" || url.password !== "" || url.search !== "") return null;
  return /\/methodology-lifecycle(?:\.md|\.html)?$/.test(url.pathname) ? anchor : null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks one entry on its own (not against the rest of the registry); pushes problems prefixed with `at`. */
function checkEntry(v: unknown, at: string, problems: string[]): MethodologyRelease | null {
  if (!isRecord(v)) {
    problems.push(`${at}: expected an object`);
    return null;
  }
  const before = problems.length;
  const unknown = Object.keys(v).filter((k) => !(RELEASE_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) problems.push(`${at}: unknown field(s) ${unknown.join(", ")}`);
  for (const k of RELEASE_KEYS) if (!(k in v)) problems.push(`${at}.${k}: missing (write null when it does not apply)`);
  const { version, status, git_tag, released_at, status_reason, superseded_by, fix_url } = v;

  const versionOk = typeof version === "string" && VERSION.test(version);
  if (!versionOk) problems.push(`${at}.version: expected a dotted MAJOR.MINOR.PATCH version, got ${JSON.stringify(version)}`);
  const statusOk = (METHODOLOGY_STATUSES as readonly unknown[]).includes(status);
  if (!statusOk) problems.push(`${at}.status: expected one of ${METHODOLOGY_STATUSES.join(", ")}, got ${JSON.stringify(status)}`);
  if (versionOk && git_tag !== `methodology-v${version}`) {
    problems.push(`${at}.git_tag: expected "methodology-v${version}", got ${JSON.stringify(git_tag)}`);
  }
  const releasedMs = parseTimestamp(released_at);
  if (releasedMs === null || timestampToWire(releasedMs) !== released_at) {
    problems.push(`${at}.released_at: expected an RFC 3339 UTC timestamp with milliseconds and Z, got ${JSON.stringify(released_at)}`);
  }
  if (status === "active") {
    if (status_reason !== null) problems.push(`${at}.status_reason: must be null while the version is active`);
    if (superseded_by !== null) problems.push(`${at}.superseded_by: an active version is not superseded (make it deprecated)`);
  } else if (typeof status_reason !== "string" || status_reason.trim() === "" || status_reason.length > MAX_REASON) {
    problems.push(`${at}.status_reason: a ${String(status)} version needs a reason (1-${MAX_REASON} characters)`);
  }
  if (superseded_by !== null && (typeof superseded_by !== "string" || !VERSION.test(superseded_by))) {
    problems.push(`${at}.superseded_by: expected null or a dotted version, got ${JSON.stringify(superseded_by)}`);
  }
  if (status === "broken") {
    if (typeof fix_url !== "string" || lifecycleAnchor(fix_url) === null) {
      problems.push(`${at}.fix_url: a broken version needs a link to a section of ${LIFECYCLE_DOC} (${LIFECYCLE_DOC}#<anchor> or an https URL of it), got ${JSON.stringify(fix_url)}`);
    }
  } else if (fix_url !== null) {
    problems.push(`${at}.fix_url: only a broken version has one (write null)`);
  }
  if (problems.length > before) return null;
  return Object.freeze({
    version: version as string,
    status: status as MethodologyStatus,
    git_tag: git_tag as string,
    released_at: released_at as string,
    status_reason: status_reason as string | null,
    superseded_by: superseded_by as string | null,
    fix_url: fix_url as string | null,
  });
}

/**
 * Validates one release entry on its own (the rules that need no other entry). For a registry use `parseRegistry`,
 * which also checks the entries against each other.
 */
export function parseRelease(input: unknown): MethodologyRelease {
  const problems: string[] = [];
  const r = checkEntry(input, "release", problems);
  if (r === null) throw new MethodologyRegistryError(problems);
  return r;
}

/**
 * Validates a registry (parsed JSON) and returns it frozen. Besides each entry's own rules: versions are unique; at
 * most one version per major is `active`; `superseded_by` names another listed version that is higher and not broken.
 * Throws one `MethodologyRegistryError` listing every problem.
 */
export function parseRegistry(input: unknown): MethodologyRegistry {
  const problems: string[] = [];
  if (!isRecord(input)) throw new MethodologyRegistryError(["expected an object {\"versions\": [...]}"]);
  const unknown = Object.keys(input).filter((k) => !REGISTRY_KEYS.has(k));
  if (unknown.length > 0) problems.push(`unknown field(s) ${unknown.join(", ")}`);
  const list = input["versions"];
  if (!Array.isArray(list) || list.length === 0) throw new MethodologyRegistryError([...problems, "versions: expected a non-empty array"]);
  const entries = list.map((v, i) => checkEntry(v, `versions[${i}]`, problems));
  const valid = entries.filter((e): e is MethodologyRelease => e !== null);
  const byVersion = new Map<string, MethodologyRelease>();
  for (const e of valid) {
    if (byVersion.has(e.version)) problems.push(`version ${e.version} is listed twice`);
    byVersion.set(e.version, e);
  }
  const activeByMajor = new Map<string, string[]>();
  for (const e of valid) {
    if (e.status !== "active") continue;
    const major = e.version.split(".")[0]!;
    activeByMajor.set(major, [...(activeByMajor.get(major) ?? []), e.version]);
  }
  for (const [major, versions] of activeByMajor) {
    if (versions.length > 1) problems.push(`major ${major} has ${versions.length} active versions (${versions.join(", ")}); at most one may be active`);
  }
  for (const e of valid) {
    if (e.superseded_by === null) continue;
    const next = byVersion.get(e.superseded_by);
    if (next === undefined) problems.push(`${e.version}.superseded_by: ${e.superseded_by} is not in the registry`);
    else if (compareVersions(next.version, e.version) <= 0) problems.push(`${e.version}.superseded_by: ${next.version} is not newer than ${e.version}`);
    else if (next.status === "broken") problems.push(`${e.version}.superseded_by: ${next.version} is broken; point at a version that is not`);
  }
  if (problems.length > 0) throw new MethodologyRegistryError(problems);
  return Object.freeze({ versions: Object.freeze(valid) });
}

/** The registry's entry for `version`, or undefined. */
export function releaseOf(registry: MethodologyRegistry, version: string): MethodologyRelease | undefined {
  return registry.versions.find((r) => r.version === version);
}

/** The entry of the version this build implements (`METHODOLOGY_VERSION`); a registry without it is invalid for this build. */
export function ownRelease(registry: MethodologyRegistry): MethodologyRelease {
  const own = releaseOf(registry, METHODOLOGY_VERSION);
  if (own === undefined) throw new MethodologyRegistryError([`the registry does not list ${METHODOLOGY_VERSION}, the version this build implements`]);
  return own;
}

/** The registry shipped with this build (`registry.json`), validated when this module loads. */
export const SHIPPED_REGISTRY: MethodologyRegistry = parseRegistry(shippedRegistryJson);

/** What start-up does with the release this build implements. */
export type StartupVerdict =
  | { readonly kind: "serve" }
  | { readonly kind: "warn"; readonly message: string }
  | { readonly kind: "refuse"; readonly message: string; readonly fix_url: string };

/**
 * `serve` for an active release; `warn` (serve, with one warning line) for a deprecated one; `refuse` for a broken
 * one, with a message that names `fix_url` so the operator knows where to go next.
 */
export function startupVerdict(r: MethodologyRelease): StartupVerdict {
  const next = r.superseded_by === null ? "" : `; superseded by ${r.superseded_by}`;
  if (r.status === "broken") {
    const fix = r.fix_url ?? `${LIFECYCLE_DOC}#broken`;
    return {
      kind: "refuse",
      message:
        `methodology ${r.version} is broken (${r.status_reason ?? "no reason given"})${next}: this build must not serve. ` +
        `Refusing to start; what to do: ${fix}`,
      fix_url: fix,
    };
  }
  if (r.status === "deprecated") {
    return {
      kind: "warn",
      message: `methodology ${r.version} is deprecated (${r.status_reason ?? "no reason given"})${next}; plan the upgrade: ${LIFECYCLE_DOC}#deprecated`,
    };
  }
  return { kind: "serve" };
}
