import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseScenario, type Scenario } from "../streams/sources/scenario/scenario.ts";

/** The shipped scenario library, `scenarios/` at the package root. */
export const SCENARIO_DIR = fileURLToPath(new URL("../../scenarios/", import.meta.url));

/** Names of the shipped scenarios (file names without `.jsonl`), sorted. */
export function scenarioNames(dir = SCENARIO_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => f.slice(0, -".jsonl".length))
    .sort();
}

/** Loads a scenario by path (if the file exists) or by library name. Throws with a clear message otherwise. */
export function loadScenario(ref: string, dir = SCENARIO_DIR): Scenario {
  let path = ref;
  if (!(existsSync(path) && statSync(path).isFile())) {
    const named = join(dir, `${ref}.jsonl`);
    if (!existsSync(named)) {
      const known = scenarioNames(dir);
      throw new Error(`no scenario file or library scenario named "${ref}" (library: ${known.join(", ") || "empty"})`);
    }
    path = named;
  }
  const name = basename(path).replace(/\.jsonl$/, "");
  return parseScenario(name, readFileSync(path, "utf8"));
}
