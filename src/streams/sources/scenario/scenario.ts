import { sampleFromWire, parseTimestamp, type EpochMs, type Sample } from "../../../methodology/index.ts";

/** One predicted transition, from a `# expect: ASSET FROM -> TO` header line. */
export interface Expectation {
  readonly asset: string;
  readonly from: string;
  readonly to: string;
  /** Optional `key=value` qualifiers after the states: `trigger=dwell_timer`, `gate=discount_sanity`. */
  readonly qualifiers: Readonly<Record<string, string>>;
}

/** A parsed scenario file (JSON Lines, one sample per line; `#` lines are the header and comments). */
export interface Scenario {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** The transitions the description predicts, in order. */
  readonly expect: readonly Expectation[];
  /** Predicted number of skipped samples (`# expect-skipped: N`), or null when not stated. */
  readonly expectSkipped: number | null;
  /** Predicted number of transitions (`# expect-transitions: N`), for load scenarios too long to list; or null. */
  readonly expectTransitions: number | null;
  /** Optional instant the replay clock runs to after the last sample (`# until: <ts>`). */
  readonly until: EpochMs | null;
  readonly samples: readonly Sample[];
  /** 1-based source line of each sample, for error messages. */
  readonly lines: readonly number[];
}

/** A scenario file that does not parse. `line` is 1-based. */
export class ScenarioFormatError extends Error {
  readonly code = "invalid_scenario";
  constructor(
    readonly scenario: string,
    readonly line: number,
    message: string,
  ) {
    super(`${scenario}:${line}: ${message}`);
    this.name = "ScenarioFormatError";
  }
}

const EXPECT = /^([^\s]+)\s+([A-Z_]+)\s*->\s*([A-Z_]+)((?:\s+[a-z_]+=[A-Za-z_]+)*)$/;

/**
 * Parses a scenario: header lines `# title: …`, `# description: …` (may repeat), `# expect: USDC PEGGED -> DRIFT`
 * (optionally followed by `trigger=dwell_timer` / `gate=oracle_confidence`), `# expect-skipped: 1`,
 * `# expect-transitions: 230` (a count, for load scenarios),
 * `# until: 2026-06-12T12:00:00.000Z`; other `#` lines are comments; blank lines are ignored; every other line is a
 * sample (addendum G) with a non-decreasing `ts`.
 */
export function parseScenario(name: string, text: string): Scenario {
  let title = name;
  const description: string[] = [];
  const expect: Expectation[] = [];
  let until: EpochMs | null = null;
  let expectSkipped: number | null = null;
  let expectTransitions: number | null = null;
  const samples: Sample[] = [];
  const lines: number[] = [];
  let lastTs = -Infinity;
  const rows = text.split(/\r?\n/);
  for (let i = 0; i < rows.length; i++) {
    const lineNo = i + 1;
    const row = rows[i]!.trim();
    if (row === "") continue;
    if (row.startsWith("#")) {
      const body = row.slice(1).trim();
      const colon = body.indexOf(":");
      const key = colon > 0 ? body.slice(0, colon).trim().toLowerCase() : "";
      const value = colon > 0 ? body.slice(colon + 1).trim() : "";
      if (key === "title") title = value;
      else if (key === "description") description.push(value);
      else if (key === "expect") {
        const m = EXPECT.exec(value);
        if (!m) throw new ScenarioFormatError(name, lineNo, `expect must read "ASSET FROM -> TO", got "${value}"`);
        const qualifiers: Record<string, string> = {};
        for (const q of (m[4] ?? "").trim().split(/\s+/).filter(Boolean)) {
          const [k, v] = q.split("=") as [string, string];
          qualifiers[k] = v;
        }
        expect.push({ asset: m[1]!, from: m[2]!, to: m[3]!, qualifiers });
      } else if (key === "expect-skipped" || key === "expect-transitions") {
        if (!/^\d+$/.test(value)) throw new ScenarioFormatError(name, lineNo, `${key} must be a whole number`);
        if (key === "expect-skipped") expectSkipped = +value;
        else expectTransitions = +value;
      } else if (key === "until") {
        until = parseTimestamp(value);
        if (until === null) throw new ScenarioFormatError(name, lineNo, "until must be an RFC 3339 timestamp");
      }
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(row);
    } catch (e) {
      throw new ScenarioFormatError(name, lineNo, `not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    let sample: Sample;
    try {
      sample = sampleFromWire(json);
    } catch (e) {
      throw new ScenarioFormatError(name, lineNo, e instanceof Error ? e.message : String(e));
    }
    if (sample.ts < lastTs) throw new ScenarioFormatError(name, lineNo, "ts goes backwards (samples must be non-decreasing)");
    lastTs = sample.ts;
    samples.push(sample);
    lines.push(lineNo);
  }
  if (until !== null && samples.length > 0 && until < lastTs) {
    throw new ScenarioFormatError(name, 1, "until is before the last sample");
  }
  return { name, title, description: description.join(" "), expect, expectSkipped, expectTransitions, until, samples, lines };
}
