import { jetstream } from "@nats-io/jetstream";
import { filter, map, type Observable } from "rxjs";
import { ActorHost, type StateEvent } from "../../actors/index.ts";
import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import { decimalToWire } from "../../methodology/index.ts";
import type { Api } from "../../http/server.ts";
import type { Store } from "../../store/index.ts";
import {
  applyRecovery,
  EngineLink,
  INTAKE_LEASE_KEY,
  LeaseKeeperThread,
  readRecovery,
  RecentAlertIds,
  serveMachineInspection,
  LeaderSpread,
  startPartition,
  type LiveState,
  type LogFn,
  type natsLeaseStore,
  type Partition,
  type RecoveryRead,
  type RecoverySummary,
} from "../../streams/jetstream/index.ts";
import { transitionLine } from "../../streams/sources/scenario/replay.ts";
import type { statelyInspector } from "../inspect.ts";
import type { Feed } from "./feed.ts";
import type { latestStoredReceipt } from "./foundations.ts";
import type { NatsLink } from "./nats.ts";
import type { SharedIntake } from "./shared-intake.ts";
import { requestsAnswered, type UndoStack } from "./undo.ts";

type Inspector = ReturnType<typeof statelyInspector>;

/** What start-up is still doing before this process's engine runs, as the API reports it (/readyz, machine routes). */
export class EngineProgress {
  /** The engine's link to JetStream, once started (the API opens before it). */
  link: EngineLink | null = null;
  /** What start-up is still doing, or null once the engine runs (intake and projectors). */
  starting: string | null;
  intakeOpen = false;

  constructor(runsEngine: boolean) {
    this.starting = runsEngine ? "recovering actors" : null;
  }
}

/** The alert ids /v1/audit/{id} answers 202 for: acknowledged by JetStream, not yet in the store. */
export class PendingAlerts {
  /** Acknowledged by this engine (ROLE=all) and not projected yet (bounded: the 10,000 most recent). */
  readonly #acked = new Set<string>();
  /** Seen on PEG_TRANSITIONS by this process's WebSocket feed, so an API process knows the engines' transitions. */
  readonly #onStream = new RecentAlertIds();

  acked(id: string): void {
    if (this.#acked.size >= 10_000) this.#acked.delete(this.#acked.values().next().value!);
    this.#acked.add(id);
  }

  projected(id: string): void {
    this.#acked.delete(id);
  }

  seenOnStream(id: string): void {
    this.#onStream.add(id);
  }

  has(id: string): boolean {
    return this.#acked.has(id) || this.#onStream.has(id);
  }
}

/**
 * Creates the actor host on the feed's clock (an API process's holds no actors); with INSPECT_PORT every actor streams
 * to the Stately inspector bridge (its WebSocket client loaded when asked for).
 */
export function actorHosts(config: Config, catalog: Catalog, log: LogFn, undo: UndoStack): { create(clock: Clock): Promise<ActorHost>; inspector(): Inspector | null } {
  let inspector: Inspector | null = null;
  return {
    inspector: () => inspector,
    create: async (clock) => {
      if (config.inspectPort !== null) {
        const opened = (await import("../inspect.ts")).statelyInspector(config.inspectPort);
        inspector = opened;
        undo.push(async () => opened.stop());
        log("info", "actors stream to the Stately inspector bridge", { url: `ws://127.0.0.1:${config.inspectPort}` });
      }
      const h = new ActorHost({
        assets: config.role !== "api" ? catalog.active : [],
        clock,
        gitSha: config.gitSha,
        step: { intrinsicLivenessGate: config.intrinsicLivenessGate },
        ...(inspector === null ? {} : { inspect: inspector.inspect }),
      });
      undo.push(async () => h.stop());
      return h;
    },
  };
}

/** The engine's published recomputes as the WebSocket stream takes them (what `peg.state.<mint>` carries). */
export function localStates(host: ActorHost): Observable<LiveState> {
  return host.events$.pipe(
    filter((e): e is StateEvent => e.kind === "state"),
    map((e) => ({ mint: e.mint, state: e.state, discount: decimalToWire(e.discount), at: e.now })),
  );
}

export interface EngineParts {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly host: ActorHost;
  readonly nats: NatsLink;
  readonly recoveryRead: RecoveryRead;
  readonly fromStore: ReturnType<typeof latestStoredReceipt>;
  /** ROLE=engine: the lease bucket. */
  readonly leaseStore: Awaited<ReturnType<typeof natsLeaseStore>> | null;
  readonly feed: Feed;
  /** ROLE=engine with INTAKE=shared: the engine's clock and the consumer of PEG_INTAKE. */
  readonly shared: SharedIntake | null;
  /** Wall clock (leases). */
  readonly clock: Clock;
  readonly store: Store;
  readonly alerts: PendingAlerts;
  readonly progress: EngineProgress;
  readonly api: Api | null;
  /** Receives each acknowledged transition's summary line. */
  readonly transition: ((line: string) => void) | undefined;
  readonly log: LogFn;
  readonly undo: UndoStack;
}

export interface Engine {
  readonly link: EngineLink;
  readonly recovery: RecoverySummary;
  /** The engine's leases; null unless ROLE=engine. */
  readonly partition: Partition | null;
  /** The store as the transition projector writes it: a projected alert is no longer pending. */
  readonly projectingStore: Store;
  /** After the link drained: stops the actors and what watches them. */
  stopActors(): void;
}

/**
 * The engine: machine inspection, the JetStream link (started before the actors are restored: a resumed deadline may
 * emit a transition at once), the recovered actors and, ROLE=engine, the partition of leased assets.
 */
export async function startEngine(p: EngineParts): Promise<Engine> {
  const { config, catalog, host, nats, log, undo } = p;
  // An API process runs no actors and must not answer for them.
  const inspection = config.role !== "api" ? serveMachineInspection(nats.nc, host, { partitioned: config.role === "engine" }) : null;
  undo.push(async () => inspection?.unsubscribe());
  const link = new EngineLink(host, nats.nc, jetstream(nats.nc), nats.topology, {
    log,
    // Publishes awaiting their ack: at about 30 ms per ack on a busy machine, 256 capped the samples near 8,000/s.
    window: 1024,
    // Room for two ticks of every asset: the throttle admits a tick only when the queue can take all of it.
    maxQueuedSamples: Math.max(10_000, 2 * catalog.active.length),
    // Sample batches per lease partition (peg.samples.<p>), so a partition's samples travel together; one otherwise.
    sampleBatches: { partitions: Math.max(1, config.leasePartitions) },
  });
  p.progress.link = link;
  link.start();
  undo.push(() => link.close());
  const acked = link.acked$.subscribe((a) => {
    p.alerts.acked(a.receipt.alert_id);
    if (!a.duplicate) p.transition?.(JSON.stringify(transitionLine(a.receipt)));
    p.api?.metrics.transitions.inc({ to_state: a.receipt.to_state });
  });
  const projectingStore: Store = {
    ...p.store,
    insertTransition: async (receipt, meta) => {
      const inserted = await p.store.insertTransition(receipt, meta);
      p.alerts.projected(receipt.alert_id);
      return inserted;
    },
  };
  if (config.role === "all") fenceEveryAsset(p, link);
  const recovery = applyRecovery(host, config.role === "all" ? catalog.active : [], p.recoveryRead.states);
  log("info", "recovered actors", { ...recovery });
  await requestsAnswered();
  let partition: Partition | null = null;
  if (p.leaseStore !== null) {
    const started = startPartition({
      store: p.leaseStore,
      host,
      link,
      topology: nats.topology,
      assets: catalog.active,
      clock: p.clock,
      engineClock: p.shared?.clock ?? p.feed.clock,
      log,
      fromStore: p.fromStore,
      partitions: config.leasePartitions,
      // The renewals on a thread of their own: a take-over's stall of this thread's event loop must not let this
      // engine's own leases lapse, nor the intake's (docs/scaling.md, "The lease keeper").
      lease: { keeper: new LeaseKeeperThread({ servers: nats.servers, alsoKeys: p.shared !== null ? [INTAKE_LEASE_KEY] : [] }) },
      // One pass over the buckets for a failover's states only on a single server: on a cluster the pass's consumer
      // can sit on a follower that lags, and bench:cluster restored hundreds of assets cold from what it missed.
      bulkRestore: config.natsReplicas === 1,
      // A shared intake's stream has what an acquired partition missed. Otherwise a live feed cannot be replayed: the
      // partition keeps what it received instead (and so does a scenario run with SCENARIO_CATCHUP=received, which
      // rehearses exactly that).
      ...(p.shared !== null ? { intake: p.shared.consumer } : p.feed.samplesOf !== undefined && config.scenarioCatchUp === "file" ? { samplesOf: p.feed.samplesOf } : {}),
    });
    partition = started;
    undo.push(() => started.stop());
    if (config.natsReplicas > 1) {
      const spread = new LeaderSpread({ nc: nats.nc, jsm: nats.topology.jsm, duty: () => started.leadsChores(), clock: p.clock, log });
      spread.start();
      undo.push(() => spread.stop());
    }
  }
  const stopActors = () => {
    acked.unsubscribe();
    inspection?.unsubscribe();
    host.stop();
  };
  return { link, recovery, partition, projectingStore, stopActors };
}

/**
 * ROLE=all uses the engines' fencing token too (docs/scaling.md): the start-up recovery read each asset's last
 * transition, so every transition is published expecting its predecessor. Nothing else should publish for these
 * assets, but should something do so (a second ROLE=all process by mistake, a restored stream) the stream stays one
 * chain per asset: the rejected asset is restored from its last transition in the stream.
 */
function fenceEveryAsset(p: EngineParts, link: EngineLink): void {
  const { catalog, host, log } = p;
  for (const a of catalog.active) link.fence(a.mint, p.recoveryRead.transitionSeqs.get(a.mint) ?? 0);
  link.onConflict(async (mint) => {
    const asset = catalog.active.find((a) => a.mint === mint);
    if (asset === undefined) return;
    const read = await readRecovery([asset], p.nats.topology, { log, fromStore: p.fromStore, preferTransition: true });
    link.fence(mint, read.transitionSeqs.get(mint) ?? 0);
    const r = read.states.get(mint);
    if (r === undefined) host.activateAsset(mint);
    else host.restoreAsset(mint, r.state);
    log("info", "restored asset from the stream after a rejected transition", { asset: asset.symbol, mint, from: r?.source ?? "cold" });
  });
}
