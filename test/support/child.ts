/**
 * Child processes and temporary directories for tests that run the repository's code as a user would (the CLI, the
 * examples, git): a child gets only PATH and HOME of this process plus what the test gives it, its stdin is closed
 * and its output is kept; a command run in-process (`runCli`-shaped) gets in-memory stdout and stderr instead.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll } from "vitest";

/**
 * Temporary directories for the calling test file: returns a function that makes one under the system's temporary
 * directory, named `prefix` plus random characters; all of them are removed in `afterAll`.
 */
export function tempDirsForSuite(): (prefix: string) => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return (prefix) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
}

/** A child's whole environment: this process's PATH and HOME (`/tmp` when unset), then `env`. */
export function childEnv(env: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env };
}

export interface ChildRun {
  readonly proc: ChildProcess;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exit: Promise<number | null>;
  /** stdout so far. */
  out(): string;
  /** stderr so far. */
  err(): string;
}

/** Starts `command args` in `cwd` with `childEnv(env)`, stdin closed, stdout and stderr kept. */
export function spawnChild(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string> }): ChildRun {
  const proc = spawn(command, args, { cwd: options.cwd, env: childEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (err += c.toString()));
  const exit = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  return { proc, exit, out: () => out, err: () => err };
}

/** `spawnChild` to its end: resolves at exit with the code and everything it printed. */
export async function runChild(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string> }): Promise<{ code: number | null; out: string; err: string }> {
  const run = spawnChild(command, args, options);
  const code = await run.exit;
  return { code, out: run.out(), err: run.err() };
}

/** Runs an in-process command on in-memory stdout and stderr; resolves with its exit code and what it wrote. */
export async function captureCli(command: (io: { stdout: PassThrough; stderr: PassThrough }) => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (c: Buffer) => (out += c.toString()));
  stderr.on("data", (c: Buffer) => (err += c.toString()));
  const code = await command({ stdout, stderr });
  return { code, out, err };
}
