import { map } from "rxjs";
import { SimulatedClock, type Clock } from "../../clock.ts";
import type { Catalog } from "../../catalog/index.ts";
import type { Config } from "../../config.ts";
import {
  ensureIntakeStream,
  IntakeConsumer,
  IntakeLeader,
  IntakePublisher,
  PipelinedPublisher,
  untilAnswered,
  type IntakeSource,
  type LogFn,
  type natsLeaseStore,
  type Partition,
} from "../../streams/jetstream/index.ts";
import type { IntakeThrottle } from "../../streams/intake-throttle.ts";
import type { SupplyLeg } from "../../streams/sources/legs.ts";
import type { Feed } from "./feed.ts";
import type { NatsLink } from "./nats.ts";
import type { UndoStack } from "./undo.ts";

/**
 * PEG_INTAKE's byte bound. 15 minutes of 10,000 samples a second take about 0.8 GB: a sample is 72 B of gzip in the
 * 8-sample batches of 64 partitions sealed every 50 ms (48 B in batches of 40), plus each message's headers.
 */
const INTAKE_MAX_BYTES = 2 * 2 ** 30;

/** Samples the intake may have waiting for PEG_INTAKE's acks: two ticks of every asset. */
const MAX_QUEUED = (assets: number) => Math.max(10_000, 2 * assets);

/**
 * ROLE=engine with `INTAKE=shared` (docs/scaling.md "Intake"): the engine's clock, moved by the intake's watermark;
 * the consumer of PEG_INTAKE that feeds the partitions this engine leases; and the intake itself, run here while this
 * engine holds the intake lease.
 */
export interface SharedIntake {
  /** The actors' clock. */
  readonly clock: SimulatedClock;
  readonly consumer: IntakeConsumer;
  /** Ensures PEG_INTAKE and follows it (before the first lease round: acquisitions hold partitions on it). */
  start(partition: Partition): Promise<void>;
  /**
   * The intake step of the start order: circulating supplies from PEG_INTAKE go to `supplies`, and this engine
   * campaigns for the intake lease. Returns the stop of both.
   */
  lead(partition: Partition, supplies: (leg: SupplyLeg) => void): () => Promise<void>;
}

export interface SharedIntakeParts {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly feed: Feed;
  readonly nats: NatsLink;
  readonly leaseStore: Awaited<ReturnType<typeof natsLeaseStore>>;
  /** Wall clock (the lease, and a scenario's wall instants). */
  readonly baseClock: Clock;
  readonly throttle: IntakeThrottle;
  readonly log: LogFn;
  readonly undo: UndoStack;
}

export function sharedIntake(p: SharedIntakeParts): SharedIntake {
  const { config, feed, nats, log, undo } = p;
  // A scenario's engine clock starts where its timeline does: the first intake publishes from the first sample, and
  // the watermark of whatever the stream holds moves it on, so no sample it evaluates is stamped before its now.
  const clock = new SimulatedClock(feed.timelineStart ?? feed.clock.now());
  let partition: Partition | null = null;
  let supplies: ((leg: SupplyLeg) => void) | null = null;
  const scenario = config.feed.kind === "scenario";
  const consumer = new IntakeConsumer({
    nc: nats.nc,
    clock,
    ingest: (s) => void partition?.ingest(s.sample, s.at),
    supply: (leg) => supplies?.(leg),
    // A scenario's instants run SCENARIO_SPEED times faster than the wall clock the stream stamps messages with.
    wallOf: scenario ? (at) => p.baseClock.now() - (feed.clock.now() - at) / config.scenarioSpeed : (at) => at,
    log,
  });
  return {
    clock,
    consumer,
    start: async (part) => {
      partition = part;
      const bytes = await untilAnswered("ensuring PEG_INTAKE", () => ensureIntakeStream(nats.topology.jsm, config.natsReplicas, INTAKE_MAX_BYTES), { log });
      if (bytes < INTAKE_MAX_BYTES) log("warn", "PEG_INTAKE holds less than 2 GiB: the server's file store could not reserve it", { max_bytes: bytes });
      await untilAnswered("following PEG_INTAKE", () => consumer.start(), { log });
      undo.push(() => consumer.stop());
    },
    lead: (part, onSupply) => {
      supplies = onSupply;
      const symbols = new Map(p.catalog.active.map((a) => [a.symbol, a.mint]));
      const leader = new IntakeLeader({
        store: p.leaseStore,
        self: part.self,
        jsm: nats.topology.jsm,
        source: intakeSource(feed, scenario),
        publisher: () =>
          new IntakePublisher({
            publisher: new PipelinedPublisher(nats.nc, { window: 1024 }),
            partitions: config.leasePartitions,
            mintOf: (symbol) => symbols.get(symbol),
            maxQueued: MAX_QUEUED(p.catalog.active.length),
            log,
          }),
        clock: p.baseClock,
        log,
        // The partitions' keeper renews the intake lease too: a stall of this thread must not move the intake.
        keeper: part.leases.keeper,
      });
      p.throttle.alsoWatch(() => leader.pressure());
      leader.start();
      undo.push(() => leader.stop());
      // The shutdown's first step: the intake is handed over (what it received is published first), then the consumer.
      return async () => {
        await leader.stop();
        await consumer.stop();
      };
    },
  };
}

/**
 * The feed as the intake opens it: a scenario from after the stream's watermark on its shared timeline (from its first
 * sample on an empty stream; each sample at its own instant, the watermark the next one not yet due), any other feed
 * from now at the instant received.
 */
function intakeSource(feed: Feed, scenario: boolean): IntakeSource {
  return {
    open: (after) => {
      if (scenario && feed.from !== undefined) {
        const f = feed.from(after);
        return { samples: f.samples.pipe(map((sample) => ({ sample, at: sample.ts }))), watermark: f.watermark };
      }
      const received = feed.feed.pipe(map((sample) => ({ sample, at: feed.clock.now() })));
      return { samples: received, watermark: () => feed.clock.now(), ...(feed.supply === undefined ? {} : { supply: feed.supply }) };
    },
  };
}
