import { EXIT, parseArgs, writeLine, type CliIO } from "./io.ts";
import { loadScenario, scenarioNames } from "./scenario-files.ts";

/** `scenarios`: lists the shipped scenario library with titles and predicted transitions. */
export function scenariosCommand(args: readonly string[], io: CliIO): number {
  const { flags, error } = parseArgs(args, { json: "boolean" });
  if (error !== null) {
    writeLine(io.stderr, `${error}\nusage: peg-oracle scenarios [--json]`);
    return EXIT.usage;
  }
  const rows = scenarioNames().map((name) => {
    const s = loadScenario(name);
    return {
      name,
      title: s.title,
      description: s.description,
      assets: [...new Set(s.samples.map((x) => x.asset))],
      samples: s.samples.length,
      expect: s.expect.map((e) => `${e.asset} ${e.from} -> ${e.to}`),
    };
  });
  if (flags["json"] === true) {
    for (const r of rows) writeLine(io.stdout, JSON.stringify(r));
    return EXIT.ok;
  }
  for (const r of rows) {
    writeLine(io.stdout, `${r.name}  (${r.samples} samples; ${r.assets.join(", ")})`);
    writeLine(io.stdout, `  ${r.title}`);
    for (const e of r.expect) writeLine(io.stdout, `  expect ${e}`);
  }
  return EXIT.ok;
}
