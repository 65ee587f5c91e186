import type { ActorHost } from "../../actors/index.ts";
import type { Config } from "../../config.ts";
import type { Api } from "../../http/server.ts";
import type { LogFn, Partition } from "../../streams/jetstream/index.ts";
import type { SupplyLeg } from "../../streams/sources/legs.ts";
import type { Feed } from "./feed.ts";
import type { Projectors } from "./projectors.ts";
import type { SharedIntake } from "./shared-intake.ts";

export interface IntakeParts {
  readonly config: Config;
  readonly feed: Feed;
  readonly host: ActorHost;
  readonly partition: Partition | null;
  /** ROLE=engine with INTAKE=shared: the samples come from PEG_INTAKE, and this engine may be the cluster's intake. */
  readonly shared: SharedIntake | null;
  readonly api: Api | null;
  readonly projectors: Projectors;
  /** Called when the feed ends or fails. */
  readonly onFeedEnd: ((error: unknown) => void) | undefined;
  readonly log: LogFn;
}

/**
 * Intake: opens a paused scenario clock, feeds every sample to the actors (ROLE=engine: to the leased ones) at the
 * feed's instant and counts the results, and records the feed's circulating supplies for the sample projector.
 * ROLE=engine with a shared intake: the samples and supplies come from PEG_INTAKE, and this engine campaigns to be
 * the cluster's intake (./shared-intake.ts). Returns the stop.
 */
export function openIntake(p: IntakeParts): () => void | Promise<void> {
  const { feed, partition, api } = p;
  const { supplies } = p.projectors;
  const supplied = (leg: SupplyLeg): void => {
    supplies.record(leg);
    p.projectors.sampleThread()?.supply(leg.mint, supplies.wireOf(leg.mint));
  };
  if (p.shared !== null && partition !== null) {
    return p.shared.lead(partition, supplied);
  }
  const scenarioTime = p.config.feed.kind === "scenario";
  feed.start?.();
  // One counter child per result, looked up once (prom-client hashes the labels on every `inc({ ... })`).
  const counted = new Map<string, { inc(): void }>();
  const intake = feed.feed.subscribe({
    next: (s) => {
      const now = scenarioTime ? s.ts : feed.clock.now();
      const result = partition === null ? p.host.ingest(s, now) : partition.ingest(s, now);
      if (api === null) return;
      let counter = counted.get(result.status);
      if (counter === undefined) counted.set(result.status, (counter = api.metrics.samples.labels({ result: result.status })));
      counter.inc();
    },
    error: (e: unknown) => p.onFeedEnd?.(e),
    // An engine among several keeps running when its scenario ends: it may still take over another's assets.
    complete: () => (p.config.role === "engine" ? p.log("info", "feed completed; still serving leases") : p.onFeedEnd?.(null)),
  });
  const supplyIntake = feed.supply?.subscribe({
    next: supplied,
    error: (e: unknown) => p.log("warn", "supply source failed; cards keep the last stored supply", { error: e instanceof Error ? e.message : String(e) }),
  });
  return () => {
    intake.unsubscribe();
    supplyIntake?.unsubscribe();
  };
}
