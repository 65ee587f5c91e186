import type { Readable, Writable } from "node:stream";
import type { BuildCommit } from "../build-info.ts";

/** Where a CLI command writes: injected so commands are testable in-process. */
export interface CliIO {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** What `peg-oracle mcp` reads MCP messages from; absent where a command has no input. */
  readonly stdin?: Readable;
  /**
   * The running code's commit as main.ts found it (src/build-info.ts): GIT_SHA's default. Absent (in-process callers,
   * tests): no default, so `git_sha` is `""` unless GIT_SHA is set.
   */
  readonly build?: BuildCommit;
}

/** Exit codes shared by every command (verify adds its own 0/1/2/3). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

export function writeLine(out: Writable, line: string): void {
  out.write(line + "\n");
}

/** Resolves when everything written so far has been flushed (for large outputs before exit). */
export function flush(out: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (out.write("")) resolve();
    else out.once("drain", () => resolve());
  });
}

/** Splits `args` into positionals and `--flag value` / `--flag` options. */
export function parseArgs(
  args: readonly string[],
  spec: Readonly<Record<string, "string" | "boolean">>,
): { positionals: string[]; flags: Record<string, string | boolean>; error: string | null } {
  const positionals: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const kind = spec[name];
    if (kind === undefined) return { positionals, flags, error: `unknown option --${name}` };
    if (kind === "boolean") {
      flags[name] = true;
      continue;
    }
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") return { positionals, flags, error: `--${name} needs a value` };
    flags[name] = value;
  }
  return { positionals, flags, error: null };
}
