import { filter, merge, NEVER, share, tap, type Observable } from "rxjs";
import type { Catalog } from "../../catalog/index.ts";
import { ScaledClock, type Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import type { Sample } from "../../methodology/index.ts";
import { sharedScenarioNow, TOPOLOGY, type LogFn, type natsLeaseStore, type RecoveryRead } from "../../streams/jetstream/index.ts";
import type { IntakeThrottle } from "../../streams/intake-throttle.ts";
import { assembleSamples } from "../../streams/sources/assembly.ts";
import type { SupplyLeg } from "../../streams/sources/legs.ts";
import { simulatedLegs } from "../../streams/sources/simulated-market/legs.ts";
import { simulatedMarket, simulatedSupply } from "../../streams/sources/simulated-market/index.ts";
import { isSupplyLeg } from "../../streams/sources/supply.ts";

/**
 * Samples per slice of a simulated tick: about 10 ms of evaluation on the benchmark machine, so the event loop reads
 * acknowledgements and answers HTTP between slices even when a tick is 10,000 samples.
 */
const SIM_SLICE_SIZE = 500;

/**
 * The configured feed and the clock the engine runs on, and the feed's circulating supplies (`supply` legs: live Solana
 * RPC, or the simulated market's; a scenario has none). `start` opens a paused scenario clock with the intake;
 * `samplesOf` (several engines on one scenario) is what an acquired asset missed.
 */
export interface Feed {
  readonly feed: Observable<Sample>;
  readonly clock: Clock;
  readonly supply?: Observable<SupplyLeg>;
  readonly start?: () => void;
  readonly samplesOf?: (symbol: string, after: number, until: number) => Sample[];
  /**
   * Several engines on one scenario with a shared intake: the scenario's samples after `after` (the intake's last
   * published watermark; -Infinity, an empty stream: from the scenario's first sample, as the offline replay, or from
   * as far back as PEG_INTAKE keeps on an older timeline) on the shared timeline, those already due at once, and the
   * watermark (the next sample not yet due).
   */
  readonly from?: (after: number) => { readonly samples: Observable<Sample>; watermark(): number };
  /**
   * Several engines on one scenario: the instant its shared timeline starts at (its first sample), where an engine's
   * clock starts before the intake's first watermark moves it.
   */
  readonly timelineStart?: number;
}

/**
 * The feed of `config` (an API process has none). A scenario runs on a scaled clock; when actors were recovered, it
 * resumes where they left off: the clock starts at the oldest recovered instant and each asset only receives samples
 * newer than its own state (`resumeAt`, by mint; re-fed samples would reproduce the same decisions, deduplicated
 * anyway). Throws on a scenario that cannot be loaded.
 */
export async function feedFor(
  config: Config,
  catalog: Catalog,
  clock: Clock,
  log: LogFn,
  throttle: IntakeThrottle,
  resumeAt: ReadonlyMap<string, number>,
  sharedNow?: (first: number) => Promise<number>,
): Promise<Feed> {
  if (config.role === "api") return { clock, feed: NEVER };
  switch (config.feed.kind) {
    case "sim":
      return {
        clock,
        // Ticks in slices (acknowledgements and HTTP are served while a tick of thousands of samples is evaluated),
        // skipped while the pipeline is behind (IntakeThrottle): the market produces less instead of samples dropping.
        feed: simulatedMarket({
          assets: catalog.active,
          seed: config.simSeed,
          clock,
          tickMs: config.simTickMs,
          incidentEveryMs: config.simIncidentEveryMs,
          sliceSize: SIM_SLICE_SIZE,
          admit: () => throttle.admit(),
          onSkip: (why) => (why === "busy" ? throttle.skip("the previous tick was still being evaluated") : undefined),
        }),
        supply: simulatedSupply({ assets: catalog.active, seed: config.simSeed, clock }),
      };
    case "scenario": {
      // Loaded on demand, like the live adapters below: a simulated feed never needs them.
      const [{ loadScenario }, { scenarioFeed }] = await Promise.all([import("../scenario-files.ts"), import("../../streams/sources/scenario/feed.ts")]);
      let scenario;
      try {
        scenario = loadScenario(config.feed.name);
      } catch (e) {
        throw new Error(`FEED=scenario:${config.feed.name}: ${e instanceof Error ? e.message : String(e)}`);
      }
      const first = scenario.samples[0]?.ts ?? clock.now();
      if (sharedNow !== undefined) {
        // Several engines: one scenario timeline for all (leases move assets between them); an acquired asset is fed
        // what it missed from the scenario itself (startPartition).
        const scaled = new ScaledClock(await sharedNow(first), config.scenarioSpeed, clock);
        const bySymbol = new Map<string, Sample[]>();
        for (const x of scenario.samples) bySymbol.set(x.asset, [...(bySymbol.get(x.asset) ?? []), x]);
        return {
          clock: scaled,
          feed: scenarioFeed(scenario.samples.filter((x) => x.ts > scaled.now()), scaled, config.scenarioSpeed),
          samplesOf: (symbol, after, until) => (bySymbol.get(symbol) ?? []).filter((x) => x.ts > after && x.ts <= until),
          // The first intake (an empty stream) starts at the first sample, not at the timeline's now: the engines' boot
          // took seconds of wall time, minutes of a scenario at SCENARIO_SPEED, and its first transitions were lost. At
          // most what PEG_INTAKE keeps, though: a deployment started again after its stream expired resumes there.
          from: (after) => {
            const kept = scaled.now() - TOPOLOGY.intake.maxAgeMs * config.scenarioSpeed;
            return scenarioFrom(scenarioFeed, scenario.samples, Number.isFinite(after) ? after : kept, scaled, config.scenarioSpeed);
          },
          timelineStart: first,
        };
      }
      const bySymbol = new Map<string, number>();
      for (const a of catalog.active) {
        const t = resumeAt.get(a.mint);
        if (t !== undefined) bySymbol.set(a.symbol, t);
      }
      const origin = bySymbol.size === 0 ? first : Math.max(first, Math.min(...bySymbol.values()) + 1);
      if (bySymbol.size > 0) log("info", "scenario resumes after the recovered state", { at: new Date(origin).toISOString() });
      const samples = scenario.samples.filter((x) => x.ts > (bySymbol.get(x.asset) ?? -Infinity));
      // Paused until the intake starts: recovered dwell timers must not run ahead of the samples still to come.
      const scaled = new ScaledClock(origin, config.scenarioSpeed, clock, { paused: true });
      return { clock: scaled, feed: scenarioFeed(samples, scaled, config.scenarioSpeed), start: () => scaled.start() };
    }
    case "live": {
      const { liveLegs } = await import("../../streams/sources/live/index.ts");
      const live = liveLegs(catalog, config.sources, clock, { log: (level, msg, fields) => log(level, msg, fields) });
      const legs = merge(live.legs, simulatedLegs({ assets: catalog.active, seed: config.simSeed, clock, incidentEveryMs: 0 })).pipe(share());
      return { clock, feed: assembleSamples(legs, { assets: catalog.active, catalog, clock }), supply: legs.pipe(filter(isSupplyLeg)) };
    }
  }
}

/** A scenario's samples after `after` as a feed on `clock`, and its watermark: now, or the next sample not yet emitted. */
function scenarioFrom(
  feedOf: (samples: readonly Sample[], clock: Clock, speed: number) => Observable<Sample>,
  all: readonly Sample[],
  after: number,
  clock: Clock,
  speed: number,
): { samples: Observable<Sample>; watermark(): number } {
  const rest = all.filter((x) => x.ts > after);
  let emitted = 0;
  return {
    samples: feedOf(rest, clock, speed).pipe(tap(() => emitted++)),
    watermark: () => Math.min(clock.now(), rest[emitted]?.ts ?? Infinity),
  };
}

/**
 * The feed chosen from what the recovery read: a resumed scenario feeds each asset only samples it has not applied
 * (after a dwell-timer evaluation at D a sample stamped D is still due, the timer fires first; after a sample
 * evaluation at T none is), and several engines (`leases`) share one scenario timeline.
 */
export function resumedFeed(
  config: Config,
  catalog: Catalog,
  clock: Clock,
  log: LogFn,
  throttle: IntakeThrottle,
  recoveryRead: RecoveryRead,
  leases: Awaited<ReturnType<typeof natsLeaseStore>> | null,
): Promise<Feed> {
  const resumeAt = new Map<string, number>();
  for (const [mint, r] of recoveryRead.states) {
    const at = r.state.evaluatedAt;
    if (at !== null) resumeAt.set(mint, r.state.lastTrigger === "dwell_timer" ? at - 1 : at);
  }
  const sharedNow = leases === null ? undefined : (first: number) => sharedScenarioNow(leases.kv, first, clock.now(), config.scenarioSpeed);
  return feedFor(config, catalog, clock, log, throttle, resumeAt, sharedNow);
}
