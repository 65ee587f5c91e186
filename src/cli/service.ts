/**
 * The composition root of the service (STYLE.md 12): the start order of docs/lifecycle.md as a short list of calls,
 * each into the module under ./service/ that owns that part, and the stop order written once, in reverse. Each part
 * pushes its own stop onto the undo stack as it starts, so a start that fails undoes exactly what started.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { ActorHost } from "../actors/index.ts";
import type { AnchorWorker } from "../anchor/index.ts";
import type { Catalog } from "../catalog/index.ts";
import { systemClock, type Clock } from "../clock.ts";
import type { Config, Role } from "../config.ts";
import type { Dispatcher, DeliveryWorker } from "../delivery/index.ts";
import type { Api } from "../http/server.ts";
import { startRetention, type Store } from "../store/index.ts";
import { natsLeaseStore, readRecovery, type EngineLink, type LogFn, type Partition, type RecoverySummary } from "../streams/jetstream/index.ts";
import { IntakeThrottle } from "../streams/intake-throttle.ts";
import type { ProjectorStats } from "../streams/projector/projector.ts";
import { openSecretsBox, prepareDataDir } from "./local-state.ts";
import { loadPositionsWhenReady, openPositions } from "./service/advisory.ts";
import { loadAnchoring } from "./service/anchoring.ts";
import { startDelivery, webhookDispatcher, type WebhookTestOnly } from "./service/delivery.ts";
import { actorHosts, EngineProgress, PendingAlerts, startEngine } from "./service/engine.ts";
import { feedFor, resumedFeed } from "./service/feed.ts";
import { latestStoredReceipt, openFoundations, type Foundations } from "./service/foundations.ts";
import { startHttp } from "./service/http.ts";
import { openIntake } from "./service/intake.ts";
import { spawnProjectorThread, startProjectors } from "./service/projectors.ts";
import { sharedIntake } from "./service/shared-intake.ts";
import { watchLoopStalls } from "./service/loop-stalls.ts";
import { requestsAnswered, runShutdown, UndoStack } from "./service/undo.ts";

/** How long a stop waits for the transition projector to store what was acknowledged (the next start does the rest). */
const PROJECT_AT_STOP_MS = 10_000;

/** A running service: its parts (for tests and stats) and the ordered shutdown. */
export interface Service {
  readonly store: Store;
  readonly nc: NatsConnection;
  readonly host: ActorHost;
  readonly link: EngineLink;
  readonly recovery: RecoverySummary;
  readonly natsUrl: string;
  readonly api: Api;
  readonly projected: { readonly transitions: ProjectorStats; readonly samples: ProjectorStats };
  /** Webhook dispatch and the delivery worker. */
  readonly delivery: { readonly dispatcher: Dispatcher; readonly worker: DeliveryWorker };
  /** On-chain anchoring of receipts; null when disabled (SOLANA_RPC_URL unset or an unusable fee payer). */
  readonly anchor: AnchorWorker | null;
  /** The documented shutdown order (docs/lifecycle.md). Idempotent. */
  stop(): Promise<void>;
}

/**
 * A process of one role (docs/scaling.md): `engine` has no HTTP (`api` null) and runs only the actors of the assets
 * it leases (`partition`); `api` runs no actors (its host is empty), no intake, projectors or delivery worker.
 */
export interface RoleService extends Omit<Service, "api" | "delivery"> {
  readonly role: Role;
  readonly api: Api | null;
  readonly delivery: { readonly dispatcher: Dispatcher; readonly worker: DeliveryWorker | null };
  /** The engine's leases; null unless ROLE=engine. */
  readonly partition: Partition | null;
}

export interface ServiceIO {
  readonly log: LogFn;
  /** Receives each acknowledged transition's summary line (stdout in `serve`). */
  readonly transition?: (line: string) => void;
  /** Called when the feed ends or fails (a scenario completes; a source errors). */
  readonly onFeedEnd?: (error: unknown) => void;
  /** Tests only: webhook destinations on this machine (DNS, an extra CA, loopback through the SSRF guard). */
  readonly webhookTestOnly?: WebhookTestOnly;
}

/**
 * Starts the whole service in the order of docs/lifecycle.md: store and NATS side by side, the HTTP listener (which
 * answers 503 `not_ready` on `/readyz` until the engine runs), then recovery, the engine and its JetStream link,
 * projectors, retention, delivery and intake. Resolves once intake runs. Throws (after undoing what started) when a
 * dependency fails.
 */
export async function startService(config: Config, catalog: Catalog, io: ServiceIO, baseClock: Clock = systemClock): Promise<Service> {
  if (config.role !== "all") throw new Error(`startService runs ROLE=all (got ${config.role}); use startRoleService`);
  const s = await startRoleService(config, catalog, io, baseClock);
  if (s.api === null || s.delivery.worker === null) throw new Error("ROLE=all started without its API or delivery worker");
  return { ...s, api: s.api, delivery: { dispatcher: s.delivery.dispatcher, worker: s.delivery.worker } };
}

/**
 * Starts the parts of `config.role` (docs/scaling.md) in the order of docs/lifecycle.md. ROLE=all is `startService`.
 */
export async function startRoleService(config: Config, catalog: Catalog, io: ServiceIO, baseClock: Clock = systemClock): Promise<RoleService> {
  const { log } = io;
  const undo = new UndoStack();
  let foundations: Foundations | null = null;
  try {
    // 1. Owner-only DATA_DIR (umask 077 for what PGlite and nats-server create) and the key that seals private keys.
    prepareDataDir(config, log);
    const secrets = openSecretsBox(config, log);
    // 2. The store and NATS side by side. Meanwhile the feed, unless it resumes from what the recovery reads (a
    //    scenario engine), and the actors on its clock, created cold and restored after the recovery read. The throttle
    //    is the simulated market's backpressure (watching the engine link and the projectors once they run).
    foundations = openFoundations(config, catalog, secrets, baseClock, log, undo);
    const throttle = new IntakeThrottle({ log });
    const actors = actorHosts(config, catalog, log, undo);
    const early = config.feed.kind === "scenario" && config.role !== "api" ? null : await feedFor(config, catalog, baseClock, log, throttle, new Map());
    // ROLE=engine, INTAKE=shared: the actors run on the intake's watermark (./service/shared-intake.ts), made below.
    const sharedMode = config.role === "engine" && config.intake === "shared";
    const earlyHost = early === null || sharedMode ? null : await actors.create(early.clock);
    const { store, assetsUpserted, keyRing } = await foundations.store();
    const nats = await foundations.nats;
    // ROLE=engine: assets are leased in PEG_LEASES (src/streams/jetstream/leases.ts), recovered one by one on acquisition.
    const leaseStore = config.role === "engine" ? await natsLeaseStore(nats.nc, config.natsReplicas) : null;
    // 3. The recovery read (two passes over JetStream, one store query) runs while the API starts.
    const fromStore = latestStoredReceipt(store);
    const recoveryReading = readRecovery(config.role === "all" ? catalog.active : [], nats.topology, { log, fromStore, storeHas: (mints) => store.mintsWithAlerts(mints) });
    recoveryReading.catch(() => {}); // awaited below
    const alerts = new PendingAlerts();
    const dispatcher = webhookDispatcher(config, catalog, store, nats, baseClock, log);
    const positions = openPositions(config, catalog, baseClock, log, undo);
    // 4. The API reads the feed's clock: a scenario's depends on the recovery, so it is chosen before the API starts.
    const feed = early ?? (await resumedFeed(config, catalog, baseClock, log, throttle, await recoveryReading, leaseStore));
    const shared = sharedMode ? sharedIntake({ config, catalog, feed, nats, leaseStore: leaseStore!, baseClock, throttle, log, undo }) : null;
    const host = earlyHost ?? (await actors.create(shared?.clock ?? feed.clock));
    const progress = new EngineProgress(config.role !== "api");
    // 5. HTTP, with the agent tools and their payments.
    const testOnly = io.webhookTestOnly;
    const http = await startHttp({ config, catalog, clock: feed.clock, baseClock, store, nats, host, secrets, keyRing, dispatcher, positions, throttle, progress, alerts, testOnly, log, undo });
    const { api } = http;
    // 6. While recovery runs: the sample projector's thread and anchoring's module load, delivery's consumers start.
    const thread = spawnProjectorThread(config, undo);
    const anchoring = loadAnchoring(config);
    const delivery = startDelivery({ config, nats, store, keyRing, dispatcher, clock: baseClock, log, testOnly, undo });
    await requestsAnswered();
    // 7. The engine: its link, the recovered actors, ROLE=engine its partition; then the projectors.
    const recoveryRead = await recoveryReading;
    const engineParts = { config, catalog, host, nats, recoveryRead, fromStore, leaseStore, feed, shared, clock: baseClock, store, alerts, progress, api, log, undo };
    const engine = await startEngine({ ...engineParts, transition: io.transition });
    const { link, partition } = engine;
    const projectors = startProjectors({ config, catalog, nats, store, projectingStore: engine.projectingStore, assetsUpserted, thread, throttle, link, partition, clock: baseClock, log, undo });
    // 8. Webhook delivery runs before intake; ROLE=engine: the first lease round right before intake, so no acquired
    //    actor runs (and no dwell timer fires) before the feed does.
    progress.starting = "starting webhook delivery";
    const { worker, stop: stopDelivery } = await delivery.running();
    if (partition !== null) {
      undo.push(watchLoopStalls(log));
      await shared?.start(partition);
      await partition.leases.start();
      log("info", "engine leases", { engine: partition.self, held: partition.heldAssets(), assets: catalog.active.length, leases: partition.leases.held.size });
    }
    // 9. Intake.
    const stopIntake = openIntake({ config, feed, host, partition, shared, api, projectors, onFeedEnd: io.onFeedEnd, log });
    undo.push(stopIntake);
    progress.intakeOpen = true;
    // 10. /readyz waits for the projectors too; then retention, anchoring and the advisory positions.
    progress.starting = "starting projectors";
    await projectors.running();
    const stopRetention = config.role !== "api" ? startRetention(store, baseClock) : async () => {};
    undo.push(stopRetention);
    progress.starting = null;
    const anchor = await anchoring.start(store, secrets, baseClock, log, undo);
    const cancelPositions = loadPositionsWhenReady(config, api, positions, baseClock);

    // The shutdown order of docs/lifecycle.md (its numbers on the right). Every step runs even when one fails.
    let stopping: Promise<void> | null = null;
    const stop = () =>
      (stopping ??= runShutdown(log, [
        ["stop intake", () => ((progress.intakeOpen = false), stopIntake())], // 1
        ["stop the HTTP server", () => api?.close()],
        ["stop the positions book", () => (cancelPositions(), positions?.stop())],
        // ROLE=engine: each asset's actor stops, its transitions are acked and its snapshot flushed, then its lease is
        // deleted, so another engine takes it over at once (docs/scaling.md).
        ["hand back the leases", () => partition?.stop()],
        ["drain actors and flush snapshots", () => link.close()], // 2-3
        ["stop actors", () => engine.stopActors()],
        ["stop retention", () => stopRetention()],
        ["stop the engine watch", () => http.stopEngineWatch()],
        // A dwell may have committed during the shutdown: the store holds every acknowledged transition at a clean stop.
        ["project the acknowledged transitions", () => projectors.projectTransitions(PROJECT_AT_STOP_MS)], // 4
        ["stop projectors", () => projectors.stop()], // 4
        ["stop anchoring", () => anchor?.stop()],
        ["stop webhook delivery", () => stopDelivery()],
        ["drain NATS", () => nats.nc.drain().catch(() => nats.nc.close())],
        ["close the store", () => store.close()], // 5
        ["stop nats-server", () => nats.embedded?.stop()], // 6
        ["stop the inspector", () => actors.inspector()?.stop()],
      ]));
    const natsUrl = nats.servers[0]!;
    const { recovery } = engine;
    return { store, nc: nats.nc, host, link, recovery, natsUrl, api, projected: projectors.projected, delivery: { dispatcher, worker }, anchor, role: config.role, partition, stop };
  } catch (e) {
    await foundations?.abandon();
    await undo.rollback();
    throw e;
  }
}
