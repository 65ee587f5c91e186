import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Catalog } from "../catalog/index.ts";
import { parseTimestamp, replayBundle } from "../methodology/index.ts";
import { replayScenario } from "../streams/sources/scenario/replay.ts";
import { EXIT, flush, parseArgs, writeLine, type CliIO } from "./io.ts";
import { loadScenario } from "./scenario-files.ts";

export const REPLAY_USAGE = "usage: peg-oracle replay <scenario.jsonl|name> [--bundles DIR] [--until RFC3339]";

/**
 * `replay`: runs the real engine over a scenario on a simulated clock and prints one JSON line per transition, then
 * a summary line. Byte-identical output for the same input. `--bundles DIR` writes each replay bundle as
 * `<alert_id>.json`.
 */
export async function replayCommand(args: readonly string[], io: CliIO, deps: { catalog: Catalog; gitSha: string; intrinsicLivenessGate: boolean }): Promise<number> {
  const { positionals, flags, error } = parseArgs(args, { bundles: "string", until: "string" });
  if (error !== null || positionals.length !== 1) {
    writeLine(io.stderr, error ?? REPLAY_USAGE);
    if (error !== null) writeLine(io.stderr, REPLAY_USAGE);
    return EXIT.usage;
  }
  let scenario;
  try {
    scenario = loadScenario(positionals[0]!);
  } catch (e) {
    writeLine(io.stderr, `replay: ${e instanceof Error ? e.message : String(e)}`);
    return EXIT.usage;
  }
  if (typeof flags["until"] === "string") {
    const until = parseTimestamp(flags["until"]);
    if (until === null) {
      writeLine(io.stderr, "replay: --until must be an RFC 3339 timestamp");
      return EXIT.usage;
    }
    scenario = { ...scenario, until };
  }
  let result;
  try {
    result = replayScenario(scenario, {
      resolve: (symbol) => {
        const a = deps.catalog.bySymbol(symbol);
        return a !== undefined && a.active ? a : undefined;
      },
      gitSha: deps.gitSha,
      step: { intrinsicLivenessGate: deps.intrinsicLivenessGate },
    });
  } catch (e) {
    writeLine(io.stderr, `replay: ${e instanceof Error ? e.message : String(e)}`);
    return EXIT.usage;
  }
  for (const line of result.lines) writeLine(io.stdout, JSON.stringify(line));
  writeLine(io.stdout, JSON.stringify({ summary: result.summary }));
  if (typeof flags["bundles"] === "string") {
    const dir = flags["bundles"];
    mkdirSync(dir, { recursive: true });
    for (const r of result.receipts) {
      writeFileSync(join(dir, `${r.alert_id}.json`), JSON.stringify(replayBundle(r), null, 2) + "\n");
    }
  }
  await flush(io.stdout);
  return EXIT.ok;
}
