/**
 * Node binaries of the lines users run besides the service's Node 20, from the npm registry (the `node` package, which
 * installs the platform's binary package), cached under node_modules/.cache between runs. The client package is tested
 * on them (test/package): users are on current LTS lines even though the service is held to Node 20 by its
 * uWebSockets.js build.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** The lines and their pinned versions. */
export const NODE_LINES = ["22.23.3", "24.21.0"] as const;

const CACHE = join(fileURLToPath(new URL("../..", import.meta.url)), "node_modules", ".cache", "peg-node-lines");

/** The path of Node `version`'s binary, installed from the registry on first use. */
export async function nodeBinary(version: string): Promise<string> {
  const dir = join(CACHE, version);
  const bin = join(dir, "node_modules", ".bin", "node");
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    await promisify(execFile)("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", dir, `node@${version}`], { cwd: dir });
  }
  return bin;
}
