import { ActorHost, type HostAsset, type TransitionEvent } from "../../../actors/index.ts";
import { SimulatedClock } from "../../../clock.ts";
import type { Receipt, StepOptions } from "../../../methodology/index.ts";
import { ScenarioFormatError, type Scenario } from "./scenario.ts";

/** One line of `replay` output (addendum G), keys in this order. */
export interface ReplayLine {
  readonly ts: string;
  readonly asset: string;
  readonly from_state: string;
  readonly to_state: string;
  readonly discount: string;
  readonly band: string;
  readonly gate: string | null;
  readonly trigger: string;
  readonly alert_id: string;
  readonly receipt_sha256: string;
}

export interface ReplaySummary {
  readonly samples: number;
  readonly skipped: number;
  readonly transitions: number;
}

export interface ReplayResult {
  readonly lines: readonly ReplayLine[];
  readonly receipts: readonly Receipt[];
  readonly summary: ReplaySummary;
}

export interface ReplayOptions {
  /** Resolves a scenario's asset symbol; undefined when unknown or inactive. */
  readonly resolve: (symbol: string) => HostAsset | undefined;
  readonly gitSha: string;
  readonly step?: StepOptions;
}

/** The one-line summary of a transition printed by `replay` and `serve`. */
export function transitionLine(r: Receipt): ReplayLine {
  return {
    ts: r.detected_at,
    asset: r.asset,
    from_state: r.from_state,
    to_state: r.to_state,
    discount: r.discount,
    band: r.computed.band,
    gate: r.computed.gate,
    trigger: r.inputs_frozen.trigger,
    alert_id: r.alert_id,
    receipt_sha256: r.receipt_sha256,
  };
}

/**
 * Runs the real engine (band machines on the methodology) over a scenario on a simulated clock. The clock moves to
 * each sample's `ts` (firing any dwell timer due at or before it first), then the sample is ingested; after the last
 * sample it runs to the scenario's `until`, if any. Deterministic: the same scenario gives the same result.
 */
export function replayScenario(scenario: Scenario, options: ReplayOptions): ReplayResult {
  const assets = new Map<string, HostAsset>();
  scenario.samples.forEach((s, i) => {
    if (assets.has(s.asset)) return;
    const asset = options.resolve(s.asset);
    if (asset === undefined) {
      throw new ScenarioFormatError(scenario.name, scenario.lines[i]!, `asset "${s.asset}" is not an active catalog asset`);
    }
    assets.set(s.asset, asset);
  });
  const start = scenario.samples[0]?.ts ?? 0;
  const clock = new SimulatedClock(start);
  const host = new ActorHost({
    assets: [...assets.values()],
    clock,
    gitSha: options.gitSha,
    ...(options.step === undefined ? {} : { step: options.step }),
  });
  const receipts: Receipt[] = [];
  const sub = host.events$.subscribe((e) => {
    if (e.kind === "transition") receipts.push((e as TransitionEvent).receipt);
  });
  let skipped = 0;
  try {
    for (const sample of scenario.samples) {
      clock.set(sample.ts);
      if (host.ingest(sample).status !== "accepted") skipped++;
    }
    if (scenario.until !== null) clock.set(scenario.until);
  } finally {
    sub.unsubscribe();
    host.stop();
  }
  return {
    lines: receipts.map(transitionLine),
    receipts,
    summary: { samples: scenario.samples.length, skipped, transitions: receipts.length },
  };
}
