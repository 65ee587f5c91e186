import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import type { Store } from "../../store/index.ts";
import { startBatchConsumer, TOPOLOGY, type BatchConsumer, type EngineLink, type LogFn, type Partition } from "../../streams/jetstream/index.ts";
import type { IntakeThrottle } from "../../streams/intake-throttle.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../../streams/projector/projector.ts";
import { startSampleConsumers } from "../../streams/projector/sample-consumers.ts";
import { SupplyBook } from "../../streams/sources/supply.ts";
import { spawnSampleProjectorThread, type SampleProjectorThread, type SpawnedProjectorThread } from "../sample-projector-thread.ts";
import type { NatsLink } from "./nats.ts";
import type { UndoStack } from "./undo.ts";

/** What a durable consumer of the service says when it rejects a message or a batch fails. */
export function consumerLogs(log: LogFn): { onReject(why: string): void; onError(e: unknown): void } {
  return {
    onReject: (why) => log("warn", "projector rejected a message", { why }),
    onError: (e) => log("warn", "projector batch failed; it will be redelivered", { error: e instanceof Error ? e.message : String(e) }),
  };
}

/**
 * With PostgreSQL the sample projector runs on a thread of its own, spawned once HTTP answers (its module loading
 * would compete with the listener's start for the CPU) and loading its modules while recovery runs. PGlite lives in
 * this thread, and so does its projector.
 */
export function spawnProjectorThread(config: Config, undo: UndoStack): SpawnedProjectorThread | null {
  const thread = config.role !== "api" && config.database.kind === "postgres" ? spawnSampleProjectorThread() : null;
  if (thread !== null) undo.push(() => thread.terminate());
  return thread;
}

export interface ProjectorParts {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly nats: NatsLink;
  readonly store: Store;
  /** The store the transition projector writes through (projected alerts are no longer pending). */
  readonly projectingStore: Store;
  readonly assetsUpserted: Promise<number>;
  readonly thread: SpawnedProjectorThread | null;
  readonly throttle: IntakeThrottle;
  readonly link: EngineLink;
  readonly partition: Partition | null;
  /** Wall clock (the shutdown's wait). */
  readonly clock: Clock;
  readonly log: LogFn;
  readonly undo: UndoStack;
}

export interface Projectors {
  readonly projected: { readonly transitions: ProjectorStats; readonly samples: ProjectorStats };
  /** The feed's latest circulating supplies, stamped on each projected snapshot (fed with the intake). */
  readonly supplies: SupplyBook;
  /** The sample projector's thread once started (PostgreSQL), else null. */
  sampleThread(): SampleProjectorThread | null;
  /** Awaits the consumers' start; throws when one failed. */
  running(): Promise<void>;
  /**
   * The shutdown's wait, once no actor decides any more: resolves when the transition projector (this process's or
   * another engine's: they share the durable) has acknowledged every message in `PEG_TRANSITIONS` as of the call, or
   * after `withinMs` (logged: the next start projects the rest). At once for an API process or a projector that never
   * started.
   */
  projectTransitions(withinMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The projectors (engines only: API processes only read the store). Several engines share each durable consumer:
 * every message goes to one of them; projection is idempotent. They start as soon as the catalog's rows are in (the
 * rows they write reference them), side by side with intake: their durable consumers deliver everything acknowledged
 * since they last ran, whenever they start. The simulated market's next tick waits until the engine link's queue can
 * take a whole tick and (one process projecting what it publishes, ROLE=all) the sample projector is at most a tick
 * behind.
 */
export function startProjectors(p: ProjectorParts): Projectors {
  const { config, catalog, nats, link, partition, undo } = p;
  const { onReject, onError } = consumerLogs(p.log);
  const projected = {
    transitions: { projected: 0, duplicates: 0, rejected: 0 },
    samples: { projected: 0, duplicates: 0, rejected: 0, stale: 0 },
  };
  p.throttle.watch(() => {
    const s = link.stats;
    const tick = partition === null ? catalog.active.length : partition.heldAssets();
    if (s.queuedSamples + tick > s.maxQueuedSamples) {
      return `the sample publish queue holds ${s.queuedSamples} of ${s.maxQueuedSamples}, no room for a tick of ${tick}`;
    }
    if (partition !== null) return null;
    const backlog = s.ackedSamples - (projected.samples.projected + projected.samples.duplicates + projected.samples.rejected + projected.samples.stale);
    return backlog > tick ? `the sample projector is ${backlog} samples behind` : null;
  });
  const supplies = new SupplyBook();
  let sampleThread: SampleProjectorThread | null = null;
  const starting = config.role === "api"
    ? Promise.resolve([])
    : p.assetsUpserted.then(() =>
        Promise.allSettled([
          startBatchConsumer(
            nats.nc,
            nats.topology.jsm,
            { stream: TOPOLOGY.transitions.stream, durable: "projector-transitions", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64, onError },
            transitionProjector(p.projectingStore, catalog, projected.transitions, onReject),
          ),
          p.thread !== null && config.database.kind === "postgres"
            ? p.thread.start({ data: { servers: nats.servers, databaseUrl: config.database.url, history: config.history }, stats: projected.samples, log: p.log }).then((t) => {
                sampleThread = t;
                return t;
              })
            : startSampleConsumers(nats.nc, nats.topology.jsm, sampleProjector(p.store, projected.samples, onReject, (mint) => supplies.wireOf(mint)), onError),
        ]),
      );
  starting.catch(() => {}); // awaited by running()
  const consumers: BatchConsumer[] = [];
  const stop = async () => {
    for (const c of consumers) await c.stop();
  };
  let awaited = false;
  undo.push(async () => {
    // A start that fails before the projectors were awaited stops them once they have started.
    if (awaited) return stop();
    for (const r of await starting.catch(() => [])) if (r.status === "fulfilled") await r.value.stop();
  });
  return {
    projected,
    supplies,
    sampleThread: () => sampleThread,
    running: async () => {
      const started = await starting;
      awaited = true;
      for (const r of started) if (r.status === "fulfilled") consumers.push(r.value);
      for (const r of started) if (r.status === "rejected") throw r.reason;
    },
    projectTransitions: (withinMs) => (consumers.length === 0 ? Promise.resolve() : transitionsProjected(nats, p.clock, withinMs, p.log)),
    stop,
  };
}

/** How often the shutdown's wait asks the transition projector's durable how far it has acknowledged. */
const PROJECTED_POLL_MS = 50;

/**
 * Waits until the durable `projector-transitions` has acknowledged every message up to the stream's last sequence as
 * of the call (its ack floor), or `withinMs`. A clean stop then leaves the store holding every transition it
 * acknowledged, including a dwell that committed during the shutdown.
 */
async function transitionsProjected(nats: NatsLink, clock: Clock, withinMs: number, log: LogFn): Promise<void> {
  const deadline = clock.now() + withinMs;
  const { stream } = TOPOLOGY.transitions;
  // A request still unanswered at the deadline counts as no answer (its timer cleared once it is answered).
  const ask = async <T>(request: () => Promise<T>): Promise<T | null> => {
    let timer: unknown = null;
    const expired = new Promise<null>((r) => (timer = clock.setTimeout(() => r(null), Math.max(0, deadline - clock.now()))));
    try {
      return await Promise.race([request().catch(() => null), expired]);
    } finally {
      clock.clearTimeout(timer);
    }
  };
  let last: number | null = null;
  let floor = 0;
  while (clock.now() < deadline) {
    last ??= (await ask(() => nats.topology.jsm.streams.info(stream)))?.state.last_seq ?? null;
    if (last !== null) {
      floor = (await ask(() => nats.topology.jsm.consumers.info(stream, "projector-transitions")))?.ack_floor.stream_seq ?? floor;
      if (floor >= last) return;
    }
    await new Promise<void>((r) => clock.setTimeout(r, PROJECTED_POLL_MS));
  }
  log("warn", "shutdown: transitions acknowledged but not projected yet; the next start projects them", { stream_last_seq: last, projected_to_seq: floor, waited_ms: withinMs });
}
