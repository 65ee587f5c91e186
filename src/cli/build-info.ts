/**
 * `build-info`: writes build-info.json naming the commit of this code, for a copy that runs without `.git` (a
 * container image, a tarball): there `git_sha` comes from the file (src/build-info.ts). Run it where the commit is
 * known: in the checkout, or with GIT_SHA set (e.g. CI's commit variable), before copying the code.
 */
import { BUILD_INFO_FILE, REPO_ROOT, writeBuildInfo } from "../build-info.ts";
import { EXIT, parseArgs, writeLine, type CliIO } from "./io.ts";

export const BUILD_INFO_USAGE = `usage: peg-oracle build-info [--dir DIR]    (writes DIR/${BUILD_INFO_FILE}; default DIR: the repository's root)`;

/** `gitSha` is the configured commit: GIT_SHA, else what main.ts read from the checkout. Exit 0 written, 1 unknown. */
export async function buildInfoCommand(args: readonly string[], io: CliIO, gitSha: string): Promise<number> {
  const { positionals, flags, error } = parseArgs(args, { dir: "string", help: "boolean" });
  if (flags["help"] === true) {
    writeLine(io.stdout, BUILD_INFO_USAGE);
    return EXIT.ok;
  }
  if (error !== null || positionals.length > 0) {
    writeLine(io.stderr, `${error ?? `unexpected argument "${positionals[0]!}"`}\n${BUILD_INFO_USAGE}`);
    return EXIT.usage;
  }
  if (gitSha === "") {
    writeLine(io.stderr, `build-info: the commit is unknown (${io.build?.detail ?? "GIT_SHA is not set"}): set GIT_SHA`);
    return EXIT.failure;
  }
  const path = writeBuildInfo(gitSha, typeof flags["dir"] === "string" ? flags["dir"] : REPO_ROOT);
  writeLine(io.stdout, JSON.stringify({ written: path, git_sha: gitSha }));
  return EXIT.ok;
}
