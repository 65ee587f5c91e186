import type { Catalog } from "../catalog/index.ts";
import { EXIT, parseArgs, writeLine, type CliIO } from "./io.ts";

function thresholdText(t: Readonly<Record<string, number | undefined>>): string {
  return Object.entries(t)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

/** `catalog`: the tracked assets with their derived anchor, risk side, calibration and thresholds. */
export function catalogCommand(args: readonly string[], io: CliIO, catalog: Catalog): number {
  const { flags, error } = parseArgs(args, { json: "boolean", all: "boolean" });
  if (error !== null) {
    writeLine(io.stderr, `${error}\nusage: peg-oracle catalog [--json] [--all]`);
    return EXIT.usage;
  }
  const assets = flags["all"] === true ? catalog.all : catalog.active;
  if (flags["json"] === true) {
    for (const a of assets) {
      writeLine(
        io.stdout,
        JSON.stringify({
          symbol: a.symbol,
          name: a.name,
          mint: a.mint,
          class: a.class,
          anchor: a.anchor,
          peg_target: a.pegTarget,
          decimals: a.decimals,
          active: a.active,
          monitoring_only: a.monitoringOnly,
          calibration: a.calibration,
          risk_side: a.riskSide,
          threshold_kind: a.thresholdKind,
          thresholds: a.thresholds,
        }),
      );
    }
    return EXIT.ok;
  }
  writeLine(io.stdout, `catalog ${catalog.version.slice(0, 12)}: ${catalog.active.length} active of ${catalog.all.length}`);
  for (const a of assets) {
    const cols = [
      a.symbol.padEnd(11),
      a.class.padEnd(13),
      a.anchor.padEnd(4),
      a.riskSide.padEnd(7),
      a.calibration.padEnd(12),
      a.active ? "active  " : "inactive",
      thresholdText(a.thresholds as Readonly<Record<string, number | undefined>>),
    ];
    writeLine(io.stdout, cols.join(" "));
  }
  return EXIT.ok;
}
