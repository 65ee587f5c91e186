import type { ActorHost } from "../../actors/index.ts";
import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import type { Dispatcher, KeyRing } from "../../delivery/index.ts";
import { startApi, type Api } from "../../http/server.ts";
import type { SecretBox } from "../../secret-box.ts";
import type { Store } from "../../store/index.ts";
import { requestMachineView, type LogFn } from "../../streams/jetstream/index.ts";
import type { IntakeThrottle } from "../../streams/intake-throttle.ts";
import type { PositionsBooks } from "../positions-books.ts";
import type { WebhookTestOnly } from "./delivery.ts";
import { localStates, type EngineProgress, type PendingAlerts } from "./engine.ts";
import { watchEngines, type NatsLink } from "./nats.ts";
import { agentRoutes } from "./payments.ts";
import type { UndoStack } from "./undo.ts";

export interface HttpParts {
  readonly config: Config;
  readonly catalog: Catalog;
  /** The feed's clock (card staleness, snapshot ages). */
  readonly clock: Clock;
  /** Wall clock (the agent tools' payments, the engine watch). */
  readonly baseClock: Clock;
  readonly store: Store;
  readonly nats: NatsLink;
  readonly host: ActorHost;
  readonly secrets: SecretBox;
  readonly keyRing: KeyRing;
  readonly dispatcher: Dispatcher;
  readonly positions: PositionsBooks | null;
  readonly throttle: IntakeThrottle;
  readonly progress: EngineProgress;
  readonly alerts: PendingAlerts;
  readonly testOnly: WebhookTestOnly | undefined;
  readonly log: LogFn;
  readonly undo: UndoStack;
}

/** HTTP (null in an engine process) and, in an API process, the watch on the engines' heartbeats. */
export interface Http {
  readonly api: Api | null;
  stopEngineWatch(): void;
}

/**
 * HTTP as early as it can answer correctly: every route reads the store (open and migrated) or NATS; until the engine
 * runs, /readyz answers 503 with what start-up is doing, the machine routes 503 `not_ready`, and the advisory routes
 * 503 `not_ready` until the positions book's first load. An API process has no engine of its own: it reports engines
 * alive when one holds a heartbeat in PEG_LEASES.
 */
export async function startHttp(p: HttpParts): Promise<Http> {
  const { config, nats, progress, testOnly, log } = p;
  const engineSeen = config.role !== "api" ? null : watchEngines(nats.nc, p.baseClock);
  p.undo.push(async () => engineSeen?.stop());
  const stopEngineWatch = () => engineSeen?.stop();
  if (config.role === "engine") return { api: null, stopEngineWatch };
  const extraRoutes = await agentRoutes(config, p.catalog, p.store, p.secrets, p.baseClock, log);
  const api = await startApi({
    config,
    catalog: p.catalog,
    clock: p.clock,
    store: p.store,
    natsAlive: () => nats.nc.rtt().then(() => true),
    engineAlive: () => (engineSeen === null ? progress.intakeOpen : engineSeen.alive()),
    starting: () => progress.starting,
    overload: () => progress.link?.overload() ?? p.throttle.overload(),
    sampleQueue: () => ({ queued: progress.link?.stats.queuedSamples ?? 0, dropped: progress.link?.stats.droppedSamples ?? 0, skippedTicks: p.throttle.skipped }),
    // Pending: acknowledged by this engine (ROLE=all), or seen on PEG_TRANSITIONS by this process's WebSocket feed
    // (any process serving the API, so an API process knows the transitions the engines published).
    pendingAlert: (id) => p.alerts.has(id),
    onStreamTransition: (id) => p.alerts.seenOnStream(id),
    nc: nats.nc,
    // ROLE=all decides every recompute itself: its WebSocket stream takes them from its engine, not back from NATS.
    ...(config.role === "all" ? { localStates: localStates(p.host) } : {}),
    machine: async (mint) => {
      // ROLE=all answers for its own actors: none to ask before they are recovered.
      if (config.role === "all" && progress.starting !== null) return { kind: "unavailable", reason: `the engine is starting (${progress.starting})` };
      try {
        const view = await requestMachineView(nats.nc, mint);
        return view === null ? { kind: "unknown" } : { kind: "ok", view };
      } catch (e) {
        return { kind: "unavailable", reason: e instanceof Error ? e.message : String(e) };
      }
    },
    log,
    secrets: p.secrets,
    webhookKeys: (now) => p.keyRing.publicList(now),
    webhookDelivery: { test: (hook) => p.dispatcher.test(hook), replay: (hook, window) => p.dispatcher.replay(hook, window) },
    ...(p.positions === null ? {} : { advisory: p.positions }),
    extraRoutes,
    ...(testOnly === undefined
      ? {}
      : { destinationsForTests: { ...(testOnly.resolve === undefined ? {} : { resolve: testOnly.resolve }), allowLoopbackForTests: testOnly.allowLoopback === true } }),
  });
  p.undo.push(async () => api.close());
  log("info", "http listening", { host: config.host, port: api.port });
  log("info", "metrics listening", { host: config.metricsHost, port: api.metricsPort });
  return { api, stopEngineWatch };
}
