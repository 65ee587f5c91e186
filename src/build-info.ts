/**
 * Which code is running: the commit that `git_sha` names in receipts and replay bundles when `GIT_SHA` is not set.
 *
 * Read, in order, from the checkout this code lives in (`.git` next to `src/`, by reading its files: no git binary
 * needed; a linked worktree's `.git` file, loose refs, packed-refs and a detached HEAD are understood, and `git
 * rev-parse` is asked only when the files cannot answer, e.g. a reftable repository), then from `build-info.json` at
 * the same root (written by `peg-oracle build-info` where the commit is known, for a copy that ships without `.git`).
 * Where neither says, the commit is unknown: `serve` warns at start (`unknownCommitWarning`), never silently.
 *
 * The location is the code's own (this file's URL), not the working directory: a service started from anywhere names
 * the code that decided.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root: the folder holding `src/`, `bin/` and, in a checkout, `.git`. */
export const REPO_ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The build-info file's name, at the root. */
export const BUILD_INFO_FILE = "build-info.json";

/** The running code's commit and where it was found. */
export interface BuildCommit {
  /** Lower-case hex commit (40 digits from git; 7-40 from a build-info file), `""` when unknown. */
  readonly sha: string;
  /** `git`: the checkout's HEAD; `build-info`: `build-info.json`; `none`: unknown. */
  readonly source: "git" | "build-info" | "none";
  /** Where it was read, or why it is unknown (for the start-up log). */
  readonly detail: string;
}

/** What a build-info file holds (`git_sha` as GIT_SHA accepts it: 7-40 hex digits). */
export interface BuildInfoFile {
  readonly git_sha: string;
}

const SHA1 = /^[0-9a-f]{40}$/;
const GIT_SHA_TEXT = /^[0-9a-f]{7,40}$/i;

/** The commit of the code under `root` (default: this checkout). Never throws. */
export function readBuildCommit(root: string = REPO_ROOT): BuildCommit {
  const git = gitHead(root);
  if ("sha" in git) return { sha: git.sha, source: "git", detail: git.detail };
  const info = buildInfo(root);
  if ("sha" in info) return { sha: info.sha, source: "build-info", detail: info.detail };
  return { sha: "", source: "none", detail: `${git.why}; ${info.why}` };
}

/** Writes `build-info.json` naming `sha` into `root`; returns the file's path. */
export function writeBuildInfo(sha: string, root: string = REPO_ROOT): string {
  if (!GIT_SHA_TEXT.test(sha)) throw new Error(`not a commit id (7-40 hex digits): "${sha}"`);
  const path = join(root, BUILD_INFO_FILE);
  const file: BuildInfoFile = { git_sha: sha.toLowerCase() };
  writeFileSync(path, JSON.stringify(file, null, 2) + "\n");
  return path;
}

/** The start-up warning for a service whose receipts will carry an empty `git_sha`, or null when it has one. */
export function unknownCommitWarning(gitSha: string, build: BuildCommit | undefined): string | null {
  if (gitSha !== "") return null;
  return (
    "git_sha is empty: receipts and replay bundles will not say which code decided. Set GIT_SHA to the commit, run from a git " +
    `checkout, or write ${BUILD_INFO_FILE} where the commit is known (GIT_SHA=<commit> npx peg-oracle build-info)` +
    (build === undefined ? "" : ` (${build.detail})`)
  );
}

type Found = { readonly sha: string; readonly detail: string } | { readonly why: string };

function gitHead(root: string): Found {
  const dotGit = join(root, ".git");
  if (!existsSync(dotGit)) return { why: `no .git in ${root}` };
  try {
    const fromFiles = headFromFiles(dotGit, root);
    if ("sha" in fromFiles) return fromFiles;
    const fromGit = headFromGit(root);
    return fromGit ?? fromFiles;
  } catch (e) {
    return headFromGit(root) ?? { why: `${dotGit} cannot be read (${e instanceof Error ? e.message : String(e)})` };
  }
}

/** HEAD through the repository's files: `.git` (a directory, or a worktree's `gitdir:` file), HEAD, refs, packed-refs. */
function headFromFiles(dotGit: string, root: string): Found {
  let gitDir = dotGit;
  if (statSync(dotGit).isFile()) {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, "utf8"));
    if (m === null) return { why: `${dotGit} is neither a git directory nor a "gitdir:" file` };
    gitDir = resolve(root, m[1]!);
  }
  // A linked worktree keeps HEAD (and per-worktree refs) in its own git dir, the branches in the common one.
  const commonFile = join(gitDir, "commondir");
  const commonDir = existsSync(commonFile) ? resolve(gitDir, readFileSync(commonFile, "utf8").trim()) : gitDir;
  let text = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
  let via = "HEAD";
  // A ref may itself be symbolic; git follows at most five levels.
  for (let depth = 0; depth < 5; depth++) {
    if (SHA1.test(text.toLowerCase())) return { sha: text.toLowerCase(), detail: `${join(gitDir, "HEAD")} (${via})` };
    const ref = /^ref:\s*(\S+)$/.exec(text);
    if (ref === null) return { why: `${via} in ${gitDir} is not a SHA-1 commit or a ref` };
    const name = ref[1]!;
    via = name;
    const loose = [join(gitDir, name), join(commonDir, name)].find((p) => existsSync(p) && statSync(p).isFile());
    if (loose !== undefined) {
      text = readFileSync(loose, "utf8").trim();
      continue;
    }
    const packed = packedRef(commonDir, name);
    if (packed === null) return { why: `${name} has no commit yet in ${commonDir} (or its refs are not files)` };
    text = packed;
  }
  return { why: `HEAD in ${gitDir}: symbolic refs nested too deep` };
}

function packedRef(commonDir: string, name: string): string | null {
  const path = join(commonDir, "packed-refs");
  if (!existsSync(path)) return null;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.startsWith("#") || line.startsWith("^")) continue;
    const [sha, ref] = line.trim().split(" ");
    if (ref === name && sha !== undefined) return sha;
  }
  return null;
}

/** HEAD as `git rev-parse` says, for repositories whose refs are not files (reftable); null without git or a commit. */
function headFromGit(root: string): { sha: string; detail: string } | null {
  try {
    const out = execFileSync("git", ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5_000,
    }).trim();
    return SHA1.test(out) ? { sha: out, detail: `git rev-parse HEAD in ${root}` } : null;
  } catch {
    return null;
  }
}

function buildInfo(root: string): Found {
  const path = join(root, BUILD_INFO_FILE);
  if (!existsSync(path)) return { why: `no ${path}` };
  try {
    const sha = (JSON.parse(readFileSync(path, "utf8")) as Partial<BuildInfoFile>).git_sha;
    if (typeof sha !== "string" || !GIT_SHA_TEXT.test(sha)) return { why: `${path} has no git_sha of 7-40 hex digits` };
    return { sha: sha.toLowerCase(), detail: path };
  } catch (e) {
    return { why: `${path} cannot be read (${e instanceof Error ? e.message : String(e)})` };
  }
}
