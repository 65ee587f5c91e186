/**
 * The environment of a scale-out test's process, from the files an operator installs (deploy/env/common.env, then
 * the role's file): what is documented in deploy/ is what the tests run. The test's own values (its servers'
 * addresses, a temporary DATA_DIR, its secrets key, the feed it replays) are laid over them; an override of a
 * variable the files do not set is refused, so a test cannot drift from the files unnoticed.
 */
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";

const DEPLOY = new URL("../../deploy/env/", import.meta.url);
const UNITS = new URL("../../deploy/systemd/", import.meta.url);

/** What the deploy files set for `role` (common.env, then `<role>.env`). */
export function deployedEnv(role: "engine" | "api"): Record<string, string> {
  const read = (file: string) => parseEnv(readFileSync(new URL(file, DEPLOY), "utf8")) as Record<string, string>;
  return { ...read("common.env"), ...read(`${role}.env`) };
}

/** The deploy files' environment for `role` with the test's `overrides` (each must be a variable the files set), plus `extra`. */
export function roleEnv(role: "engine" | "api", overrides: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  const env = deployedEnv(role);
  const unknown = Object.keys(overrides).filter((k) => !(k in env));
  if (unknown.length > 0) throw new Error(`deploy/env does not set ${unknown.join(", ")} for ${role}: add it there or pass it as extra`);
  return { ...env, ...overrides, ...extra };
}

/**
 * The node flags of the role's systemd unit (`ExecStart=/usr/bin/node <flags> --import tsx ...`): a test or benchmark
 * runs the role's process with them, as the unit does (its young generation's size changes how much of a take-over
 * goes to the garbage collector).
 */
export function deployedNodeArgs(role: "engine" | "api"): string[] {
  const unit = readFileSync(new URL(`peg-oracle-${role}.service`, UNITS), "utf8");
  const exec = /^ExecStart=\S+\s+(.*)$/m.exec(unit);
  if (exec === null) throw new Error(`deploy/systemd/peg-oracle-${role}.service has no ExecStart`);
  const args = exec[1]!.split(/\s+/);
  const end = args.indexOf("--import");
  if (end < 0) throw new Error(`deploy/systemd/peg-oracle-${role}.service: ExecStart does not run node --import tsx`);
  return args.slice(0, end);
}
