/**
 * `git_sha` names the code that decided (issue 23). With GIT_SHA unset it is the checkout's HEAD, read from `.git`'s
 * files (a branch, packed refs, a detached HEAD, a linked worktree: checked against `git rev-parse HEAD` in temporary
 * repositories), else `build-info.json` (a copy of the code without `.git`), else empty with a warning at start.
 * Through the real entry point: a replay's bundles and a started service's receipts carry the commit and verify.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILD_INFO_FILE, REPO_ROOT, readBuildCommit, unknownCommitWarning } from "../src/build-info.ts";
import { runCli } from "../src/cli/index.ts";
import { parseConfig } from "../src/config.ts";
import { replayBundle, verifyBundle } from "../src/methodology/index.ts";
import { jetStreamTransitions } from "./faults/invariants.ts";
import { captureCli, runChild, tempDirsForSuite } from "./support/child.ts";
import { startNats, type TestNats } from "./support/nats.ts";
import { freePort } from "./support/ports.ts";
import { spawnServe } from "./support/serve.ts";

const tempDir = tempDirsForSuite();

/** git in `cwd`, isolated from the machine's and the user's configuration. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  }).trim();
}

function commit(repo: string, text: string): string {
  writeFileSync(join(repo, "file.txt"), text);
  git(repo, "add", "file.txt");
  git(repo, "commit", "-q", "-m", text);
  return git(repo, "rev-parse", "HEAD");
}

/** readBuildCommit, asserting that `.git`'s files answered (not the `git rev-parse` fallback). */
function fromFiles(root: string): string {
  const b = readBuildCommit(root);
  expect(b.source, b.detail).toBe("git");
  expect(b.detail).not.toMatch(/^git rev-parse/);
  return b.sha;
}

/**
 * Asserts that `sha` is this checkout's HEAD as of some moment of the test: at or after `since`, at or before the
 * HEAD now (others may commit in this checkout while the test runs).
 */
function expectCheckoutHead(sha: unknown, since: string): void {
  expect(sha).toMatch(/^[0-9a-f]{40}$/);
  const ancestor = (a: string, b: string) => {
    try {
      git(REPO_ROOT, "merge-base", "--is-ancestor", a, b);
      return true;
    } catch {
      return false;
    }
  };
  expect(ancestor(since, sha as string) && ancestor(sha as string, git(REPO_ROOT, "rev-parse", "HEAD")), `${String(sha)} is HEAD since ${since}`).toBe(true);
}

describe("readBuildCommit: the checkout's HEAD from .git's files", () => {
  it("this checkout: git rev-parse HEAD, and the configuration's gitSha when GIT_SHA is unset", () => {
    const head = git(REPO_ROOT, "rev-parse", "HEAD");
    expect(readBuildCommit().sha).toBe(head);
    expect(parseConfig({}, { gitSha: readBuildCommit().sha }).gitSha).toBe(head);
    // GIT_SHA still wins, and without a build commit the default stays empty (tests that pin hashes rely on both).
    expect(parseConfig({ GIT_SHA: "ABCDEF1" }, { gitSha: head }).gitSha).toBe("abcdef1");
    expect(parseConfig({}).gitSha).toBe("");
  });

  it("a branch as a loose ref, then packed, then a detached HEAD", () => {
    const repo = tempDir("peg-git-");
    git(repo, "init", "-q", "-b", "main");
    const first = commit(repo, "one");
    const second = commit(repo, "two");
    expect(fromFiles(repo)).toBe(second);

    git(repo, "pack-refs", "--all", "--prune");
    expect(readdirSync(join(repo, ".git", "refs", "heads"))).toEqual([]);
    expect(fromFiles(repo)).toBe(second);

    git(repo, "checkout", "-q", "--detach", first);
    expect(fromFiles(repo)).toBe(git(repo, "rev-parse", "HEAD"));
    expect(fromFiles(repo)).toBe(first);
  });

  it("a linked worktree (.git is a file, relative or absolute): its own HEAD, the common dir's refs", () => {
    const repo = tempDir("peg-git-main-");
    git(repo, "init", "-q", "-b", "main");
    const mainHead = commit(repo, "one");
    const wt = join(tempDir("peg-git-wt-"), "wt");
    git(repo, "worktree", "add", "-q", "-b", "side", wt);
    const sideHead = commit(wt, "side");
    expect(sideHead).not.toBe(mainHead);
    expect(fromFiles(wt)).toBe(git(wt, "rev-parse", "HEAD"));
    expect(fromFiles(repo)).toBe(mainHead);

    // The branch packed in the common dir; the worktree's .git file with a relative gitdir.
    git(repo, "pack-refs", "--all", "--prune");
    const gitdir = /^gitdir: (.+)$/m.exec(readFileSync(join(wt, ".git"), "utf8"))![1]!;
    writeFileSync(join(wt, ".git"), `gitdir: ${relative(wt, gitdir)}\n`);
    expect(git(wt, "rev-parse", "HEAD")).toBe(sideHead);
    expect(fromFiles(wt)).toBe(sideHead);

    git(wt, "checkout", "-q", "--detach", mainHead);
    expect(fromFiles(wt)).toBe(mainHead);
  });

  it("a repository without a commit, and no build-info.json: unknown, and the reason says where it looked", () => {
    const repo = tempDir("peg-git-empty-");
    git(repo, "init", "-q", "-b", "main");
    const b = readBuildCommit(repo);
    expect(b).toMatchObject({ sha: "", source: "none" });
    expect(b.detail).toContain("refs/heads/main");
    expect(b.detail).toContain(BUILD_INFO_FILE);
  });
});

describe("build-info.json: where there is no .git", () => {
  it("is read when there is no .git, ignored when there is one, and refused when it names no commit", () => {
    const copy = tempDir("peg-copy-");
    expect(readBuildCommit(copy)).toMatchObject({ sha: "", source: "none" });
    writeFileSync(join(copy, BUILD_INFO_FILE), JSON.stringify({ git_sha: "ABCDEF1234567" }));
    expect(readBuildCommit(copy)).toMatchObject({ sha: "abcdef1234567", source: "build-info" });

    writeFileSync(join(copy, BUILD_INFO_FILE), JSON.stringify({ git_sha: "not hex" }));
    expect(readBuildCommit(copy)).toMatchObject({ sha: "", source: "none" });

    // A stale file in a checkout: the checkout's HEAD wins.
    git(copy, "init", "-q", "-b", "main");
    const head = commit(copy, "one");
    writeFileSync(join(copy, BUILD_INFO_FILE), JSON.stringify({ git_sha: "abcdef1" }));
    expect(readBuildCommit(copy)).toMatchObject({ sha: head, source: "git" });
  });

  it("peg-oracle build-info writes it from GIT_SHA or the checkout, and refuses when the commit is unknown", async () => {
    const run = (args: string[], env: Record<string, string>, build?: ReturnType<typeof readBuildCommit>) =>
      captureCli((io) => runCli(args, { ...io, env, ...(build === undefined ? {} : { build }) }));
    const dir = tempDir("peg-build-info-");
    expect((await run(["build-info", "--dir", dir], { GIT_SHA: "ABCDEF1" })).code).toBe(0);
    expect(readBuildCommit(dir)).toMatchObject({ sha: "abcdef1", source: "build-info" });
    const checkout = readBuildCommit();
    expect((await run(["build-info", "--dir", dir], {}, checkout)).code).toBe(0);
    expect(readBuildCommit(dir)).toMatchObject({ sha: checkout.sha, source: "build-info" });

    const unknown = readBuildCommit(tempDir("peg-nothing-"));
    const refused = await run(["build-info", "--dir", dir], {}, unknown);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain("set GIT_SHA");
  });

  it("the start-up warning: only when git_sha is empty, naming what to do and where it looked", () => {
    const unknown = readBuildCommit(tempDir("peg-nothing-"));
    expect(unknownCommitWarning(readBuildCommit().sha, readBuildCommit())).toBeNull();
    const w = unknownCommitWarning("", unknown);
    expect(w).toMatch(/^git_sha is empty/);
    expect(w).toContain("GIT_SHA");
    expect(w).toContain(BUILD_INFO_FILE);
    expect(w).toContain(unknown.detail);
  });
});

/** Runs a command of `bin/peg-oracle.js` under `root` (a copy or this checkout); resolves with exit code and output. */
function peg(root: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return runChild(process.execPath, [join(root, "bin", "peg-oracle.js"), ...args], { cwd: tmpdir(), env });
}

function bundles(dir: string): Record<string, unknown>[] {
  return readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Record<string, unknown>);
}

describe("through the entry point (bin/peg-oracle.js, src/main.ts) with GIT_SHA unset", () => {
  it("replay from this checkout: every bundle carries HEAD and verifies", async () => {
    const since = git(REPO_ROOT, "rev-parse", "HEAD");
    const out = join(tempDir("peg-replay-"), "bundles");
    const r = await peg(REPO_ROOT, ["replay", "oracle-confidence-blowout", "--bundles", out], {});
    expect(r.code, r.err).toBe(0);
    const all = bundles(out);
    expect(all.length).toBeGreaterThan(0);
    for (const b of all) {
      expectCheckoutHead(b["git_sha"], since);
      expect(verifyBundle(b).exit).toBe(0);
    }
  }, 60_000);

  it("a copy without .git: a warning at start; with build-info.json written by the checkout, its commit", async () => {
    // The code without .git (as a container image holds it), its packages linked.
    const copy = tempDir("peg-nogit-");
    for (const d of ["src", "bin", "scenarios"]) cpSync(join(REPO_ROOT, d), join(copy, d), { recursive: true });
    cpSync(join(REPO_ROOT, "package.json"), join(copy, "package.json"));
    symlinkSync(join(REPO_ROOT, "node_modules"), join(copy, "node_modules"));
    // A start that stops right after the start-up checks: DATABASE_URL without SECRETS_KEY opens nothing.
    const failFast = { DATABASE_URL: "postgresql://peg@127.0.0.1:1/peg", NATS_URL: "nats://127.0.0.1:1", PORT: String(await freePort()), METRICS_PORT: "0" };

    const unknown = await peg(copy, ["serve"], failFast);
    expect(unknown.code).toBe(1);
    const warned = unknown.err.split("\n").filter((l) => l.includes("git_sha is empty")).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: "warn" });
    expect(String(warned[0]!["msg"])).toContain(join(copy, BUILD_INFO_FILE));

    // The build step: the checkout writes the file into the copy.
    const since = git(REPO_ROOT, "rev-parse", "HEAD");
    const written = await peg(REPO_ROOT, ["build-info", "--dir", copy], {});
    expect(written.code, written.err).toBe(0);
    const sha = (JSON.parse(readFileSync(join(copy, BUILD_INFO_FILE), "utf8")) as { git_sha: string }).git_sha;
    expectCheckoutHead(sha, since);
    const known = await peg(copy, ["serve"], failFast);
    expect(known.code).toBe(1);
    expect(known.err).not.toContain("git_sha is empty");
    const out = join(copy, "bundles");
    mkdirSync(out);
    expect((await peg(copy, ["replay", "oracle-confidence-blowout", "--bundles", out], {})).code).toBe(0);
    for (const b of bundles(out)) expect(b["git_sha"]).toBe(sha);
  }, 90_000);
});

describe("a service started without GIT_SHA", () => {
  let nats: TestNats;
  beforeAll(async () => {
    nats = await startNats();
  }, 30_000);
  afterAll(async () => {
    await nats?.dispose();
  });

  it("publishes receipts whose git_sha is the checkout's HEAD, and they verify", async () => {
    const since = git(REPO_ROOT, "rev-parse", "HEAD");
    // The scenario feed runs to its end and the service then stops by itself: every transition it decided is in
    // PEG_TRANSITIONS (the test's own nats-server), read after the exit, so nothing here races the service's pace.
    const service = spawnServe({
      FEED: "scenario:oracle-confidence-blowout",
      SCENARIO_SPEED: "1000",
      NATS_URL: nats.url,
      DATA_DIR: tempDir("peg-git-serve-"),
      PORT: String(await freePort()),
      HOST: "127.0.0.1",
    });
    const code = await service.exited;
    expect(code, service.stderr().slice(-3000)).toBe(0);
    expect(service.stderr()).not.toContain("git_sha is empty");
    const receipts = await jetStreamTransitions(nats.url);
    expect(receipts.length).toBeGreaterThan(0);
    for (const r of receipts) {
      expectCheckoutHead(r.git_sha, since);
      expect(verifyBundle(JSON.parse(JSON.stringify(replayBundle(r)))).exit).toBe(0);
    }
  }, 120_000);
});
