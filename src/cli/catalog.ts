import { catalogRow, type Catalog } from "../catalog/index.ts";
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
      writeLine(io.stdout, JSON.stringify(catalogRow(a)));
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
