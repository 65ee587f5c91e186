import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { filter, map, merge, NEVER, share, type Observable, type Subscription } from "rxjs";
import { ActorHost, type StateEvent } from "../actors/index.ts";
import type { Catalog } from "../catalog/index.ts";
import { ScaledClock, systemClock, type Clock } from "../clock.ts";
import type { Config, Role } from "../config.ts";
import { decimalToWire, type Sample } from "../methodology/index.ts";
import { assembleSamples } from "../streams/sources/assembly.ts";
import {
  EngineLink,
  ensureTopology,
  applyRecovery,
  readRecovery,
  requestMachineView,
  serveMachineInspection,
  startBatchConsumer,
  startEmbeddedNats,
  natsLeaseStore,
  RecentAlertIds,
  sharedScenarioNow,
  startPartition,
  TOPOLOGY,
  type BatchConsumer,
  type Partition,
  type EmbeddedNats,
  type LiveState,
  type LogFn,
  type RecoverySummary,
  type Topology,
} from "../streams/jetstream/index.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../streams/projector/projector.ts";
import { transitionLine } from "../streams/sources/scenario/replay.ts";
import { simulatedLegs } from "../streams/sources/simulated-market/legs.ts";
import { simulatedMarket, simulatedSupply } from "../streams/sources/simulated-market/index.ts";
import { IntakeThrottle } from "../streams/intake-throttle.ts";
import { isSupplyLeg, SupplyBook } from "../streams/sources/supply.ts";
import type { SupplyLeg } from "../streams/sources/legs.ts";
import { Dispatcher, dispatchHandler, openKeyRing, serveKeyAdmin, startDeliveryWorker, type DeliveryWorker, type KeyRing, type Resolve } from "../delivery/index.ts";
import { openStore, startRetention, type Store } from "../store/index.ts";
import type { AnchorWorker } from "../anchor/index.ts";
import { readinessBody } from "../http/routes/health.ts";
import { startApi, type Api } from "../http/server.ts";
import type { SecretBox } from "../secret-box.ts";
import type { statelyInspector } from "./inspect.ts";
import { openSecretsBox, prepareDataDir } from "./local-state.ts";
import { positionsBooks } from "./positions-books.ts";
import { spawnSampleProjectorThread, type SampleProjectorThread } from "./sample-projector-thread.ts";

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
  /**
   * Tests only: webhook destinations on this machine. `resolve` replaces DNS (registration check and delivery),
   * `ca` is trusted in addition to the system CAs, `allowLoopback` lets loopback addresses through the SSRF guard.
   */
  readonly webhookTestOnly?: { readonly resolve?: Resolve; readonly ca?: string; readonly allowLoopback?: boolean };
}

/**
 * The configured feed and the clock the engine runs on, and the feed's circulating supplies (`supply` legs: live Solana
 * RPC, or the simulated market's; a scenario has none). A scenario runs on a scaled clock; when actors were
 * recovered, it resumes where they left off: the clock starts at the oldest recovered instant and each asset only
 * receives samples newer than its own state (re-fed samples would reproduce the same decisions, deduplicated anyway).
 */
/**
 * Samples per slice of a simulated tick: about 10 ms of evaluation on the benchmark machine, so the event loop reads
 * acknowledgements and answers HTTP between slices even when a tick is 10,000 samples.
 */
const SIM_SLICE_SIZE = 500;

async function feedFor(
  config: Config,
  catalog: Catalog,
  clock: Clock,
  log: LogFn,
  throttle: IntakeThrottle,
  resumeAt: ReadonlyMap<string, number>,
  sharedNow?: (first: number) => Promise<number>,
): Promise<
  | {
      feed: Observable<Sample>;
      clock: Clock;
      supply?: Observable<SupplyLeg>;
      start?: () => void;
      samplesOf?: (symbol: string, after: number, until: number) => Sample[];
    }
  | { error: string }
> {
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
      const [{ loadScenario }, { scenarioFeed }] = await Promise.all([import("./scenario-files.ts"), import("../streams/sources/scenario/feed.ts")]);
      let scenario;
      try {
        scenario = loadScenario(config.feed.name);
      } catch (e) {
        return { error: `FEED=scenario:${config.feed.name}: ${e instanceof Error ? e.message : String(e)}` };
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
      const { liveLegs } = await import("../streams/sources/live/index.ts");
      const live = liveLegs(catalog, config.sources, clock, { log: (level, msg, fields) => log(level, msg, fields) });
      const legs = merge(live.legs, simulatedLegs({ assets: catalog.active, seed: config.simSeed, clock, incidentEveryMs: 0 })).pipe(share());
      return { clock, feed: assembleSamples(legs, { assets: catalog.active, catalog, clock }), supply: legs.pipe(filter(isSupplyLeg)) };
    }
  }
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

/** NATS as the service uses it: the connection, its JetStream topology and, when the service started it, the server. */
interface NatsLink {
  readonly nc: NatsConnection;
  readonly servers: readonly string[];
  readonly embedded: EmbeddedNats | null;
  readonly topology: Topology;
}

/** Starts the embedded nats-server (unless NATS_URL is set), connects and ensures the topology; `undo` gets each part. */
async function openNats(config: Config, log: LogFn, undo: (() => Promise<void>)[]): Promise<NatsLink> {
  let embedded: EmbeddedNats | null = null;
  let servers: readonly string[];
  if (config.nats.kind === "external") servers = config.nats.servers;
  else {
    const e = await startEmbeddedNats(config.nats.storeDir);
    embedded = e;
    undo.push(() => e.stop());
    servers = [e.url];
    log("info", "started embedded nats-server", { url: e.url, store: config.nats.storeDir });
  }
  // noAsyncTraces: the client otherwise builds an Error (a stack trace) for every request and subscription timer,
  // that is for every JetStream publish: 10 % of the engine's CPU at 4,000 samples/s (docs/benchmarks.md).
  const nc = await connect({ servers: [...servers], name: "peg-oracle", maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
  undo.push(() => nc.close());
  const topology = await ensureTopology(nc, config.natsReplicas);
  return { nc, servers, embedded, topology };
}

/**
 * Opens and migrates the store, starts upserting the catalog's rows (`assetsUpserted`: the projected rows reference
 * them, so the projectors wait for it; the API reads the catalog from memory and does not) and opens the webhook
 * signing key ring: generated and persisted (sealed) on first start, the same kid on every later one. On failure the
 * store is closed again.
 */
async function openStoreSide(config: Config, catalog: Catalog, secrets: SecretBox, clock: Clock): Promise<{ store: Store; assetsUpserted: Promise<number>; keyRing: KeyRing }> {
  const store = await openStore(config.database.kind === "postgres" ? { kind: "postgres", url: config.database.url } : { kind: "pglite", dataDir: config.database.dataDir }, clock);
  const assetsUpserted = store.upsertAssets(catalog.all);
  assetsUpserted.catch(() => {}); // awaited by the caller before the projectors start; a failure there fails the start
  try {
    return { store, assetsUpserted, keyRing: await openKeyRing(store.db, clock.now(), secrets) };
  } catch (e) {
    await assetsUpserted.catch(() => {});
    await store.close().catch(() => {});
    throw e;
  }
}

type Inspector = ReturnType<typeof statelyInspector>;

/** INSPECT_PORT only: the Stately inspector bridge every actor streams to (its WebSocket client loaded when asked for). */
async function openInspector(config: Config, log: LogFn, undo: (() => Promise<void>)[]): Promise<Inspector | null> {
  if (config.inspectPort === null) return null;
  const inspector = (await import("./inspect.ts")).statelyInspector(config.inspectPort);
  undo.push(async () => inspector.stop());
  log("info", "actors stream to the Stately inspector bridge", { url: `ws://127.0.0.1:${config.inspectPort}` });
  return inspector;
}

/**
 * Runs `start` once the service is ready (`ready()`, asked every `READY_POLL_MS`), or after `maxWaitMs` at the latest.
 * For the advisory positions: loading them is seconds of CPU for thousands of assets, on this thread, and must not
 * hold back recovery, the first samples or their projection (the advisory routes answer 503 `not_ready` until they
 * land, as documented). Returns the cancel (for a stop before then).
 */
function whenReady(ready: () => Promise<boolean>, clock: Clock, start: () => void, maxWaitMs = POSITIONS_START_MAX_WAIT_MS): () => void {
  const deadline = clock.now() + maxWaitMs;
  let timer: unknown = null;
  let settled = false;
  const check = async () => {
    timer = null;
    const ok = clock.now() >= deadline || (await ready().catch(() => false));
    if (settled) return;
    if (ok) {
      settled = true;
      start();
    } else timer = clock.setTimeout(() => void check(), READY_POLL_MS);
  };
  void check();
  return () => {
    settled = true;
    if (timer !== null) clock.clearTimeout(timer);
  };
}

/** The longest the positions book waits for the service to be ready before loading anyway (`whenReady`). */
const POSITIONS_START_MAX_WAIT_MS = 30_000;
/** How often `whenReady` asks whether the service is ready. */
const READY_POLL_MS = 250;

/**
 * Lets the HTTP listener answer the requests that came in during a long synchronous step of the start (creating or
 * restoring thousands of actors takes a second or more) before the next one.
 */
const requestsAnswered = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Starts the parts of `config.role` (docs/scaling.md) in the order of docs/lifecycle.md. ROLE=all is `startService`.
 */
export async function startRoleService(config: Config, catalog: Catalog, io: ServiceIO, baseClock: Clock = systemClock): Promise<RoleService> {
  const { log } = io;
  const runsEngine = config.role !== "api";
  const runsApi = config.role !== "engine";
  const partitioned = config.role === "engine";
  const undo: (() => Promise<void>)[] = [];
  const rollback = async () => {
    for (const u of undo.reverse()) await u().catch(() => {});
  };
  // Opened side by side (below); a start that fails while either is still opening closes it once it has opened.
  let natsOpening: Promise<NatsLink> | null = null;
  let storeOpening: ReturnType<typeof openStoreSide> | null = null;
  let storeOwned = false;
  try {
    // Owner-only DATA_DIR (umask 077 for what PGlite and nats-server create) and the key that seals private keys.
    prepareDataDir(config, log);
    const secrets = openSecretsBox(config, log);
    // The store (open, migrate, the catalog's rows, the signing key) and NATS (server, connection, topology) do not
    // depend on each other: side by side.
    const natsOpened = openNats(config, log, undo);
    natsOpening = natsOpened;
    natsOpened.catch(() => {}); // awaited below
    const storeOpened = openStoreSide(config, catalog, secrets, baseClock);
    storeOpening = storeOpened;
    storeOpened.catch(() => {}); // awaited below
    // Meanwhile (their work is done by PostgreSQL or PGlite and nats-server): the feed, unless it resumes from what
    // the recovery reads (a scenario), and the actors on its clock, created cold and restored after the recovery read.
    // Backpressure on the simulated market (watching the engine link and the projectors once they run).
    const throttle = new IntakeThrottle({ log });
    const earlyFeed = config.feed.kind === "scenario" && runsEngine ? null : await feedFor(config, catalog, baseClock, log, throttle, new Map());
    if (earlyFeed !== null && "error" in earlyFeed) throw new Error(earlyFeed.error);
    let inspector: Inspector | null = null;
    const createHost = async (clock: Clock): Promise<ActorHost> => {
      inspector = await openInspector(config, log, undo);
      const h = new ActorHost({
        assets: runsEngine ? catalog.active : [],
        clock,
        gitSha: config.gitSha,
        step: { intrinsicLivenessGate: config.intrinsicLivenessGate },
        ...(inspector === null ? {} : { inspect: inspector.inspect }),
      });
      undo.push(async () => h.stop());
      return h;
    };
    const earlyHost = earlyFeed === null ? null : await createHost(earlyFeed.clock);
    const { store, assetsUpserted, keyRing } = await storeOpened;
    undo.push(() => store.close());
    storeOwned = true;
    const { nc, servers, embedded, topology } = await natsOpened;
    // ROLE=engine: assets are leased in PEG_LEASES (src/streams/jetstream/leases.ts), recovered one by one on acquisition.
    const leaseStore = partitioned ? await natsLeaseStore(nc, config.natsReplicas) : null;

    const latestStoredReceipt = async (mint: string) => {
      const [latest] = await store.alerts({ mint, limit: 1, offset: 0 });
      if (latest === undefined) return null;
      const r = await store.receiptById(latest.id);
      return r === undefined ? null : r.receipt;
    };
    // The recovery read is I/O (two passes over JetStream, one store query): it runs while the API starts.
    const recoveryReading = readRecovery(config.role === "all" ? catalog.active : [], topology, {
      log,
      fromStore: latestStoredReceipt,
      storeHas: (mints) => store.mintsWithAlerts(mints),
    });
    recoveryReading.catch(() => {}); // awaited below

    // Alert ids JetStream acknowledged that the store has not projected yet: /v1/audit/{id} answers 202 for them.
    const pending = new Set<string>();
    // Alert ids seen on PEG_TRANSITIONS (bounded: the 10,000 most recent), for the same 202 in every API process.
    const onStream = new RecentAlertIds();
    // Webhook delivery: the dispatcher serves the API's test and replay routes (their work goes through JetStream, so
    // it waits there until the worker below starts); delivery timing is wall-clock time, whatever the feed's clock.
    const testOnly = io.webhookTestOnly;
    const dispatcher = new Dispatcher({
      db: store.db,
      js: jetstream(nc),
      catalog,
      now: () => baseClock.now(),
      baseUrl: config.webhookBaseUrl,
      timeScale: config.webhookTimeScale,
      log,
      telegram: config.telegramBotToken !== null,
    });
    // The advisory figures' lending positions: Kamino's obligations when KAMINO_POSITIONS_URL is set, else simulated
    // (same seed as the simulated market), in books of a few hundred assets (positions-books.ts); refreshed every
    // minute. Loaded once the service is ready (whenReady, below); until then the advisory routes answer 503.
    const positions = !runsApi
      ? null
      : positionsBooks({ assets: catalog.active, seed: config.simSeed, kaminoUrl: config.kaminoPositionsUrl, clock: baseClock, log });
    undo.push(async () => positions?.stop());

    // The feed and its clock, from what recovery read: a resumed scenario starts where the recovered actors left off.
    const choosingFeed = async () => {
      const recoveryRead = await recoveryReading;
      // A resumed scenario feeds each asset only samples it has not applied: after a dwell-timer evaluation at D a
      // sample stamped D is still due (the timer fires first), after a sample evaluation at T none is.
      const resumeAt = new Map<string, number>();
      for (const [mint, r] of recoveryRead.states) {
        const at = r.state.evaluatedAt;
        if (at !== null) resumeAt.set(mint, r.state.lastTrigger === "dwell_timer" ? at - 1 : at);
      }
      const chosen = await feedFor(
        config,
        catalog,
        baseClock,
        log,
        throttle,
        resumeAt,
        leaseStore === null ? undefined : (first) => sharedScenarioNow(leaseStore.kv, first, baseClock.now(), config.scenarioSpeed),
      );
      if ("error" in chosen) throw new Error(chosen.error);
      return { recoveryRead, chosen };
    };
    // The API reads the feed's clock (card staleness, snapshot ages): a scenario's own clock depends on the recovery,
    // so it is chosen before the API starts; simulated and live feeds (and an API process) run on wall-clock time.
    const feed = earlyFeed === null ? await choosingFeed() : { recoveryRead: null, chosen: earlyFeed };
    const host = earlyHost ?? (await createHost(feed.chosen.clock));
    const apiClock = feed.chosen.clock;

    // The engine's parts, once started (the API opens before them).
    let link: EngineLink | null = null;
    /** What start-up is still doing before this process's engine runs (null once intake runs): /readyz says it. */
    let starting: string | null = runsEngine ? "recovering actors" : null;
    let intakeOpen = false;
    // An API process has no engine of its own: it reports engines alive when one holds a heartbeat in PEG_LEASES.
    const engineSeen = runsEngine ? null : watchEngines(nc, baseClock);
    undo.push(async () => engineSeen?.stop());
    // HTTP as early as it can answer correctly: every route reads the store (open and migrated) or NATS; until the
    // engine runs, /readyz answers 503 with what start-up is doing, the machine routes 503 `not_ready`, and the
    // advisory routes 503 `not_ready` until the positions book's first load.
    // The agent tools (docs/agents.md): POST /mcp, and with X402_PAY_TO the paid tools and GET /x402/*.
    const agentRoutes = !runsApi ? null : await (await import("../mcp/service.ts")).prepareAgentRoutes({ config, catalog, db: store.db, secrets, clock: baseClock, log });
    const api = !runsApi ? null : await startApi({
      config,
      catalog,
      clock: apiClock,
      store,
      natsAlive: () => nc.rtt().then(() => true),
      engineAlive: () => (engineSeen === null ? intakeOpen : engineSeen.alive()),
      starting: () => starting,
      overload: () => link?.overload() ?? throttle.overload(),
      sampleQueue: () => ({ queued: link?.stats.queuedSamples ?? 0, dropped: link?.stats.droppedSamples ?? 0, skippedTicks: throttle.skipped }),
      // Pending: acknowledged by this engine (ROLE=all), or seen on PEG_TRANSITIONS by this process's WebSocket feed
      // (any process serving the API, so an API process knows the transitions the engines published).
      pendingAlert: (id) => pending.has(id) || onStream.has(id),
      onStreamTransition: (id) => onStream.add(id),
      nc,
      // ROLE=all decides every recompute itself: its WebSocket stream takes them from its engine, not back from NATS.
      ...(config.role === "all" ? { localStates: localStates(host) } : {}),
      machine: async (mint) => {
        // ROLE=all answers for its own actors: none to ask before they are recovered.
        if (config.role === "all" && starting !== null) return { kind: "unavailable", reason: `the engine is starting (${starting})` };
        try {
          const view = await requestMachineView(nc, mint);
          return view === null ? { kind: "unknown" } : { kind: "ok", view };
        } catch (e) {
          return { kind: "unavailable", reason: e instanceof Error ? e.message : String(e) };
        }
      },
      log,
      secrets,
      webhookKeys: (now) => keyRing.publicList(now),
      webhookDelivery: { test: (hook) => dispatcher.test(hook), replay: (hook, window) => dispatcher.replay(hook, window) },
      ...(positions === null ? {} : { advisory: positions }),
      ...(agentRoutes === null ? {} : { extraRoutes: agentRoutes }),
      ...(testOnly === undefined
        ? {}
        : { destinationsForTests: { ...(testOnly.resolve === undefined ? {} : { resolve: testOnly.resolve }), allowLoopbackForTests: testOnly.allowLoopback === true } }),
    });
    undo.push(async () => api?.close());
    if (api !== null) {
      log("info", "http listening", { host: config.host, port: api.port });
      log("info", "metrics listening", { host: config.metricsHost, port: api.metricsPort });
    }
    // With PostgreSQL the sample projector runs on a thread of its own, spawned once HTTP answers (its module loading
    // would compete with the listener's start for the CPU) and loading its modules while recovery runs.
    const projectorThread = runsEngine && config.database.kind === "postgres" ? spawnSampleProjectorThread() : null;
    if (projectorThread !== null) undo.push(() => projectorThread.terminate());

    // On-chain anchoring's module (its Solana client) loads while recovery runs; the worker starts after intake.
    const anchorModule = runsEngine ? import("../anchor/start.ts") : null;
    anchorModule?.catch(() => {}); // awaited below

    // Webhook delivery: each acked transition is dispatched to the webhooks of its asset, and the worker runs the
    // attempts from PEG_DELIVERIES. Both consumers are created while recovery runs, and awaited before intake (the
    // dispatch consumer, when first created, starts from the next transition).
    const onReject = (why: string) => log("warn", "projector rejected a message", { why });
    const onError = (e: unknown) => log("warn", "projector batch failed; it will be redelivered", { error: e instanceof Error ? e.message : String(e) });
    const workerStarting = !runsEngine ? null : startDeliveryWorker({
      nc,
      jsm: topology.jsm,
      db: store.db,
      keys: keyRing,
      now: () => baseClock.now(),
      timeScale: config.webhookTimeScale,
      log,
      ...(config.telegramBotToken === null ? {} : { telegram: { apiUrl: config.telegramApiUrl, botToken: config.telegramBotToken } }),
      allowedPorts: config.webhookAllowedPorts,
      ...(testOnly?.resolve === undefined ? {} : { resolve: testOnly.resolve }),
      ...(testOnly === undefined ? {} : { testOnly: { ...(testOnly.ca === undefined ? {} : { ca: testOnly.ca }), allowLoopback: testOnly.allowLoopback === true } }),
    });
    // Dispatch is a durable consumer of the transitions (from the next one, when first created): a transition
    // acknowledged just before a crash is dispatched after the restart, and one dispatched twice changes nothing.
    const dispatchStarting = !runsEngine
      ? null
      : startBatchConsumer(
          nc,
          topology.jsm,
          {
            stream: TOPOLOGY.transitions.stream,
            durable: "delivery-dispatch",
            filterSubject: TOPOLOGY.transitions.subjects,
            startAt: "new",
            // Each decision reads the sends decided before it: one transition at a time, in stream order, even when
            // a crash left one unacknowledged or several engines share the consumer.
            inOrder: { ackWaitMs: 10_000 },
            onError,
          },
          dispatchHandler(dispatcher, (id) => store.markDispatched(id, baseClock.now()), onReject),
        );
    const deliveryStarting = Promise.allSettled([workerStarting, dispatchStarting]);
    // Key rotation requests (`peg-oracle webhook-keys rotate`) and re-reads after another process rotated.
    const keyAdmin = serveKeyAdmin(nc, keyRing, () => baseClock.now(), { log });
    undo.push(() => keyAdmin.stop());
    let deliveryAwaited = false;
    undo.push(async () => {
      // A start that fails before the consumers were awaited stops them once they have started.
      if (deliveryAwaited) return;
      for (const r of await deliveryStarting) if (r.status === "fulfilled") await r.value?.stop();
    });

    await requestsAnswered();
    const recoveryRead = feed.recoveryRead ?? (await recoveryReading);
    const { chosen } = feed;
    const clock = chosen.clock;
    // An API process runs no actors and must not answer for them.
    const inspection = runsEngine ? serveMachineInspection(nc, host, { partitioned }) : null;
    undo.push(async () => inspection?.unsubscribe());
    const engineLink = new EngineLink(host, nc, jetstream(nc), topology, {
      log,
      // Publishes awaiting their ack: at about 30 ms per ack on a busy machine, 256 capped the samples near 8,000/s.
      window: 1024,
      // Room for two ticks of every asset: the throttle admits a tick only when the queue can take all of it.
      maxQueuedSamples: Math.max(10_000, 2 * catalog.active.length),
    });
    link = engineLink;
    engineLink.start();
    undo.push(() => engineLink.close());
    const acked: Subscription = engineLink.acked$.subscribe((a) => {
      if (pending.size >= 10_000) pending.delete(pending.values().next().value!);
      pending.add(a.receipt.alert_id);
      if (!a.duplicate) io.transition?.(JSON.stringify(transitionLine(a.receipt)));
      api?.metrics.transitions.inc({ to_state: a.receipt.to_state });
    });
    const projectingStore: Store = {
      ...store,
      insertTransition: async (receipt, meta) => {
        const inserted = await store.insertTransition(receipt, meta);
        pending.delete(receipt.alert_id);
        return inserted;
      },
    };

    if (config.role === "all") {
      // ROLE=all uses the engines' fencing token too (docs/scaling.md): the start-up recovery read each asset's last
      // transition, so every transition is published expecting its predecessor. Nothing else should publish for these
      // assets, but should something do so (a second ROLE=all process by mistake, a restored stream) the stream stays
      // one chain per asset: the rejected asset is restored from its last transition in the stream.
      for (const a of catalog.active) engineLink.fence(a.mint, recoveryRead.transitionSeqs.get(a.mint) ?? 0);
      engineLink.onConflict(async (mint) => {
        const asset = catalog.active.find((a) => a.mint === mint);
        if (asset === undefined) return;
        const read = await readRecovery([asset], topology, { log, fromStore: latestStoredReceipt, preferTransition: true });
        engineLink.fence(mint, read.transitionSeqs.get(mint) ?? 0);
        const r = read.states.get(mint);
        if (r === undefined) host.activateAsset(mint);
        else host.restoreAsset(mint, r.state);
        log("info", "restored asset from the stream after a rejected transition", { asset: asset.symbol, mint, from: r?.source ?? "cold" });
      });
    }
    const recovery = applyRecovery(host, config.role === "all" ? catalog.active : [], recoveryRead.states);
    log("info", "recovered actors", { ...recovery });
    await requestsAnswered();
    let partition: Partition | null = null;
    if (leaseStore !== null) {
      const p = startPartition({
        store: leaseStore,
        host,
        link: engineLink,
        topology,
        assets: catalog.active,
        clock: baseClock,
        engineClock: clock,
        log,
        fromStore: latestStoredReceipt,
        // A live feed cannot be replayed: the partition keeps what it received instead (and so does a scenario run
        // with SCENARIO_CATCHUP=received, which rehearses exactly that).
        ...("samplesOf" in chosen && chosen.samplesOf !== undefined && config.scenarioCatchUp === "file" ? { samplesOf: chosen.samplesOf } : {}),
      });
      partition = p;
      undo.push(() => p.stop());
    }

    // Projectors, retention, anchoring and webhook delivery run with the engines (API processes only read the store).
    // Several engines share each durable consumer: every message goes to one of them; projection is idempotent. The
    // projectors start as soon as the catalog's rows are in (the rows they write reference them), side by side with
    // intake: their durable consumers deliver everything acknowledged since they last ran, whenever they start.
    const projected = {
      transitions: { projected: 0, duplicates: 0, rejected: 0 },
      samples: { projected: 0, duplicates: 0, rejected: 0, stale: 0 },
    };
    // The simulated market's next tick waits until the engine link's queue can take a whole tick and (one process
    // projecting what it publishes, ROLE=all) the sample projector is at most a tick behind.
    throttle.watch(() => {
      const s = engineLink.stats;
      const tick = partition === null ? catalog.active.length : partition.leases.held.size;
      if (s.queuedSamples + tick > s.maxQueuedSamples) {
        return `the sample publish queue holds ${s.queuedSamples} of ${s.maxQueuedSamples}, no room for a tick of ${tick}`;
      }
      if (partition !== null) return null;
      const backlog = s.ackedSamples - (projected.samples.projected + projected.samples.duplicates + projected.samples.rejected + projected.samples.stale);
      return backlog > tick ? `the sample projector is ${backlog} samples behind` : null;
    });
    // The feed's latest circulating supplies, stamped on each projected snapshot (fed with the intake, below).
    const supplies = new SupplyBook();
    let sampleThread: SampleProjectorThread | null = null;
    const projectorsStarting = !runsEngine
      ? Promise.resolve([])
      : assetsUpserted.then(() =>
          Promise.allSettled([
            startBatchConsumer(
              nc,
              topology.jsm,
              { stream: TOPOLOGY.transitions.stream, durable: "projector-transitions", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64, onError },
              transitionProjector(projectingStore, catalog, projected.transitions, onReject),
            ),
            // With PostgreSQL the sample projector runs on a thread of its own (sample-projector-thread.ts); PGlite
            // lives in this thread, and so does its projector.
            projectorThread !== null && config.database.kind === "postgres"
              ? projectorThread.start({ data: { servers, databaseUrl: config.database.url }, stats: projected.samples, log }).then((t) => {
                  sampleThread = t;
                  return t;
                })
              : startBatchConsumer(
                  nc,
                  topology.jsm,
                  { stream: TOPOLOGY.samples.stream, durable: "projector-samples", filterSubject: TOPOLOGY.samples.subjects, maxBatch: 512, onError },
                  sampleProjector(store, projected.samples, onReject, (mint) => supplies.wireOf(mint)),
                ),
          ]),
        );
    projectorsStarting.catch(() => {}); // awaited below
    const consumers: BatchConsumer[] = [];
    const stopConsumers = async () => {
      for (const c of consumers) await c.stop();
    };
    let projectorsAwaited = false;
    undo.push(async () => {
      // A start that fails before the projectors were awaited stops them once they have started.
      if (projectorsAwaited) return stopConsumers();
      for (const r of await projectorsStarting.catch(() => [])) if (r.status === "fulfilled") await r.value.stop();
    });

    starting = "starting webhook delivery";
    const [workerStarted, dispatchStarted] = await deliveryStarting;
    deliveryAwaited = true;
    if (workerStarted.status === "fulfilled") undo.push(async () => workerStarted.value?.stop());
    if (dispatchStarted.status === "fulfilled") undo.push(async () => dispatchStarted.value?.stop());
    if (workerStarted.status === "rejected") throw workerStarted.reason;
    if (dispatchStarted.status === "rejected") throw dispatchStarted.reason;
    const worker = workerStarted.value;
    const dispatching = dispatchStarted.value;
    const stopDelivery = async () => {
      await keyAdmin.stop();
      await dispatching?.stop();
      await dispatcher.idle();
      await worker?.stop();
    };

    // ROLE=engine: the first lease round right before intake, so no acquired actor runs (and no dwell timer fires)
    // before the feed does.
    if (partition !== null) {
      await partition.leases.start();
      log("info", "engine leases", { engine: partition.self, held: partition.leases.held.size, assets: catalog.active.length });
    }

    // Intake.
    const scenarioTime = config.feed.kind === "scenario";
    if ("start" in chosen) chosen.start?.();
    // One counter child per result, looked up once (prom-client hashes the labels on every `inc({ ... })`).
    const counted = new Map<string, { inc(): void }>();
    const intake = chosen.feed.subscribe({
      next: (s) => {
        const now = scenarioTime ? s.ts : clock.now();
        const result = partition === null ? host.ingest(s, now) : partition.ingest(s, now);
        if (api === null) return;
        let counter = counted.get(result.status);
        if (counter === undefined) counted.set(result.status, (counter = api.metrics.samples.labels({ result: result.status })));
        counter.inc();
      },
      error: (e: unknown) => io.onFeedEnd?.(e),
      // An engine among several keeps running when its scenario ends: it may still take over another's assets.
      complete: () => (partitioned ? log("info", "feed completed; still serving leases") : io.onFeedEnd?.(null)),
    });
    const supplyIntake = chosen.supply?.subscribe({
      next: (leg) => {
        supplies.record(leg);
        sampleThread?.supply(leg.mint, supplies.wireOf(leg.mint));
      },
      error: (e: unknown) => log("warn", "supply source failed; cards keep the last stored supply", { error: e instanceof Error ? e.message : String(e) }),
    });
    undo.push(async () => {
      intake.unsubscribe();
      supplyIntake?.unsubscribe();
    });
    intakeOpen = true;

    // /readyz waits for the projectors too.
    starting = "starting projectors";
    const projectors = await projectorsStarting;
    projectorsAwaited = true;
    for (const r of projectors) if (r.status === "fulfilled") consumers.push(r.value);
    for (const r of projectors) if (r.status === "rejected") throw r.reason;
    const stopRetention = runsEngine ? startRetention(store, baseClock) : async () => {};
    undo.push(stopRetention);
    starting = null;

    // On-chain anchoring (methodology section 8): polls the store for receipts to commit, on wall-clock time, and
    // resumes a commit it had sent before a restart; nothing before it waits for it.
    const anchor: AnchorWorker | null =
      anchorModule === null
        ? null
        : await (await anchorModule).startAnchoring({ ...config.anchor, rpcUrl: config.sources.solanaRpcUrl, db: store.db, secrets, clock: baseClock, log });
    if (anchor !== null) undo.push(() => anchor.stop());

    // An API process has nothing else to do at start: its book loads at once.
    const cancelPositions =
      api === null
        ? () => {}
        : whenReady(
            async () => !runsEngine || readinessBody(await api.readModel.readiness()).ok,
            baseClock,
            () => void positions?.start(),
          );

    let stopping: Promise<void> | null = null;
    return {
      store,
      nc,
      host,
      link: engineLink,
      recovery,
      natsUrl: servers[0]!,
      api,
      projected,
      delivery: { dispatcher, worker },
      anchor,
      role: config.role,
      partition,
      stop: () =>
        (stopping ??= (async () => {
          // Every step runs even when an earlier one failed; the first failure is reported at the end.
          let failure: unknown = null;
          const step = async (name: string, fn: () => Promise<void> | void) => {
            try {
              await fn();
            } catch (e) {
              log("error", `shutdown step failed: ${name}`, { error: e instanceof Error ? e.message : String(e) });
              failure ??= e;
            }
          };
          await step("stop intake", () => {
            intakeOpen = false;
            intake.unsubscribe();
            supplyIntake?.unsubscribe();
          }); // 1
          await step("stop the HTTP server", () => api?.close());
          await step("stop the positions book", () => {
            cancelPositions();
            return positions?.stop();
          });
          // ROLE=engine: each asset's actor stops, its transitions are acked and its snapshot flushed, then its lease
          // is deleted, so another engine takes it over at once (docs/scaling.md).
          await step("hand back the leases", () => partition?.stop());
          await step("drain actors and flush snapshots", () => engineLink.close()); // 2-3
          await step("stop actors", () => {
            acked.unsubscribe();
            inspection?.unsubscribe();
            host.stop();
          });
          await step("stop retention", () => stopRetention());
          await step("stop the engine watch", () => engineSeen?.stop());
          await step("stop projectors", () => stopConsumers()); // 4
          await step("stop anchoring", () => anchor?.stop());
          await step("stop webhook delivery", () => stopDelivery());
          await step("drain NATS", () => nc.drain().catch(() => nc.close()));
          await step("close the store", () => store.close()); // 5
          await step("stop nats-server", () => embedded?.stop()); // 6
          await step("stop the inspector", () => inspector?.stop());
          if (failure !== null) throw failure;
        })()),
    };
  } catch (e) {
    await natsOpening?.catch(() => {});
    if (!storeOwned) await (await storeOpening?.catch(() => null))?.store.close().catch(() => {});
    await rollback();
    throw e;
  }
}

/**
 * For an API process's readiness: whether some engine announced itself in PEG_LEASES within its TTL (re-read every
 * 2 s). Before the bucket exists (no engine ever started) nothing is alive; it never creates the bucket.
 */
/** The engine's published recomputes as the WebSocket stream takes them (what `peg.state.<mint>` carries). */
function localStates(host: ActorHost): Observable<LiveState> {
  return host.events$.pipe(
    filter((e): e is StateEvent => e.kind === "state"),
    map((e) => ({ mint: e.mint, state: e.state, discount: decimalToWire(e.discount), at: e.now })),
  );
}

function watchEngines(nc: NatsConnection, clock: Clock): { alive(): boolean; stop(): void } {
  let alive = false;
  let store: Awaited<ReturnType<typeof natsLeaseStore>> | null = null;
  const check = async () => {
    store ??= await natsLeaseStore(nc, "open");
    const engines = await store.list("engine.");
    const now = clock.now();
    alive = [...engines.values()].some((r) => r.value.expires_at > now);
  };
  void check().catch(() => (alive = false));
  const timer = setInterval(() => void check().catch(() => (alive = false)), 2_000);
  timer.unref();
  return { alive: () => alive, stop: () => clearInterval(timer) };
}
