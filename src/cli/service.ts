import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { merge, share, type Observable, type Subscription } from "rxjs";
import { ActorHost } from "../actors/index.ts";
import { statelyInspector } from "./inspect.ts";
import type { Catalog } from "../catalog/index.ts";
import { ScaledClock, systemClock, type Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Sample } from "../methodology/index.ts";
import { assembleSamples } from "../streams/assembly.ts";
import { liveLegs } from "../streams/live/index.ts";
import {
  EngineLink,
  ensureTopology,
  applyRecovery,
  readRecoveryStates,
  requestMachineView,
  serveMachineInspection,
  startBatchConsumer,
  startEmbeddedNats,
  TOPOLOGY,
  type BatchConsumer,
  type EmbeddedNats,
  type LogFn,
  type RecoverySummary,
} from "../streams/nats/index.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../streams/projector.ts";
import { transitionLine } from "../streams/replay.ts";
import { scenarioFeed } from "../streams/scenario-feed.ts";
import { simulatedLegs } from "../streams/sim-legs.ts";
import { simulatedMarket } from "../streams/sim.ts";
import { PositionsBook, simulatedPositions } from "../streams/positions/index.ts";
import { Dispatcher, dispatchHandler, openKeyRing, serveKeyAdmin, startDeliveryWorker, type DeliveryWorker, type Resolve } from "../delivery/index.ts";
import { openStore, startRetention, type Store } from "../store/index.ts";
import { startAnchoring, type AnchorWorker } from "../anchor/index.ts";
import { startApi, type Api } from "../http/server.ts";
import { loadScenario } from "./scenario-files.ts";

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
 * The configured feed and the clock the engine runs on. A scenario runs on a scaled clock; when actors were
 * recovered, it resumes where they left off: the clock starts at the oldest recovered instant and each asset only
 * receives samples newer than its own state (re-fed samples would reproduce the same decisions, deduplicated anyway).
 */
function feedFor(
  config: Config,
  catalog: Catalog,
  clock: Clock,
  log: LogFn,
  resumeAt: ReadonlyMap<string, number>,
): { feed: Observable<Sample>; clock: Clock; start?: () => void } | { error: string } {
  switch (config.feed.kind) {
    case "sim":
      return {
        clock,
        feed: simulatedMarket({ assets: catalog.active, seed: config.simSeed, clock, incidentEveryMs: config.simIncidentEveryMs }),
      };
    case "scenario": {
      let scenario;
      try {
        scenario = loadScenario(config.feed.name);
      } catch (e) {
        return { error: `FEED=scenario:${config.feed.name}: ${e instanceof Error ? e.message : String(e)}` };
      }
      const first = scenario.samples[0]?.ts ?? clock.now();
      const bySymbol = new Map<string, number>();
      for (const a of catalog.active) {
        const t = resumeAt.get(a.mint);
        if (t !== undefined) bySymbol.set(a.symbol, t);
      }
      const origin = bySymbol.size === 0 ? first : Math.max(first, Math.min(...bySymbol.values()) + 1);
      if (bySymbol.size > 0) log("info", "scenario resumes after the recovered state", { at: new Date(origin).toISOString() });
      const samples = scenario.samples.filter((x) => x.ts > (bySymbol.get(x.asset) ?? -Infinity));
      const scaled = new ScaledClock(origin, config.scenarioSpeed, clock, { paused: true });
      return { clock: scaled, feed: scenarioFeed(samples, scaled, config.scenarioSpeed), start: () => scaled.start() };
    }
    case "live": {
      const live = liveLegs(catalog, config.sources, clock, { log: (level, msg, fields) => log(level, msg, fields) });
      const legs = merge(live.legs, simulatedLegs({ assets: catalog.active, seed: config.simSeed, clock, incidentEveryMs: 0 })).pipe(share());
      return { clock, feed: assembleSamples(legs, { assets: catalog.active, catalog, clock }) };
    }
  }
}

/**
 * Starts the whole service in the order of docs/lifecycle.md: store, NATS and its topology, engine and JetStream
 * link, recovery, projectors, retention, then intake. Throws (after undoing what started) when a dependency fails.
 */
export async function startService(config: Config, catalog: Catalog, io: ServiceIO, baseClock: Clock = systemClock): Promise<Service> {
  const { log } = io;
  const undo: (() => Promise<void>)[] = [];
  const rollback = async () => {
    for (const u of undo.reverse()) await u().catch(() => {});
  };
  try {
    const store = await openStore(
      config.database.kind === "postgres" ? { kind: "postgres", url: config.database.url } : { kind: "pglite", dataDir: config.database.dataDir },
      baseClock,
    );
    undo.push(() => store.close());
    await store.upsertAssets(catalog.all);
    // The webhook signing key: generated and persisted on first start, the same kid on every later one.
    const keyRing = await openKeyRing(store.db, baseClock.now());

    let embedded: EmbeddedNats | null = null;
    let servers: readonly string[];
    if (config.nats.kind === "external") servers = config.nats.servers;
    else {
      embedded = await startEmbeddedNats(config.nats.storeDir);
      undo.push(() => embedded!.stop());
      servers = [embedded.url];
      log("info", "started embedded nats-server", { url: embedded.url, store: config.nats.storeDir });
    }
    const nc = await connect({ servers: [...servers], name: "peg-oracle", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    undo.push(() => nc.close());
    const topology = await ensureTopology(nc);

    const recovered = await readRecoveryStates(catalog.active, topology, {
      log,
      fromStore: async (mint) => {
        const [latest] = await store.alerts({ mint, limit: 1, offset: 0 });
        if (latest === undefined) return null;
        const r = await store.receiptById(latest.id);
        return r === undefined ? null : r.receipt;
      },
    });
    // A resumed scenario feeds each asset only samples it has not applied: after a dwell-timer evaluation at D a
    // sample stamped D is still due (the timer fires first), after a sample evaluation at T none is.
    const resumeAt = new Map<string, number>();
    for (const [mint, r] of recovered) {
      const at = r.state.evaluatedAt;
      if (at !== null) resumeAt.set(mint, r.state.lastTrigger === "dwell_timer" ? at - 1 : at);
    }
    const chosen = feedFor(config, catalog, baseClock, log, resumeAt);
    if ("error" in chosen) throw new Error(chosen.error);
    const clock = chosen.clock;

    const inspector = config.inspectPort === null ? null : statelyInspector(config.inspectPort);
    if (inspector !== null) {
      undo.push(async () => inspector.stop());
      log("info", "actors stream to the Stately inspector bridge", { url: `ws://127.0.0.1:${config.inspectPort}` });
    }
    const host = new ActorHost({
      assets: catalog.active,
      clock,
      gitSha: config.gitSha,
      step: { intrinsicLivenessGate: config.intrinsicLivenessGate },
      ...(inspector === null ? {} : { inspect: inspector.inspect }),
    });
    undo.push(async () => host.stop());
    const inspection = serveMachineInspection(nc, host);
    undo.push(async () => inspection.unsubscribe());
    const link = new EngineLink(host, nc, jetstream(nc), topology, { log });
    link.start();
    undo.push(() => link.close());
    // Alert ids JetStream acknowledged that the store has not projected yet: /v1/audit/{id} answers 202 for them.
    const pending = new Set<string>();
    const acked: Subscription = link.acked$.subscribe((a) => {
      if (pending.size >= 10_000) pending.delete(pending.values().next().value!);
      pending.add(a.receipt.alert_id);
      if (!a.duplicate) io.transition?.(JSON.stringify(transitionLine(a.receipt)));
    });
    const projectingStore: Store = {
      ...store,
      insertTransition: async (receipt, meta) => {
        const inserted = await store.insertTransition(receipt, meta);
        pending.delete(receipt.alert_id);
        return inserted;
      },
    };

    const recovery = applyRecovery(host, catalog.active, recovered);
    log("info", "recovered actors", { ...recovery });

    const projected = {
      transitions: { projected: 0, duplicates: 0, rejected: 0 },
      samples: { projected: 0, duplicates: 0, rejected: 0 },
    };
    const onReject = (why: string) => log("warn", "projector rejected a message", { why });
    const onError = (e: unknown) => log("warn", "projector batch failed; it will be redelivered", { error: e instanceof Error ? e.message : String(e) });
    const consumers: BatchConsumer[] = [];
    consumers.push(
      await startBatchConsumer(
        nc,
        topology.jsm,
        { stream: TOPOLOGY.transitions.stream, durable: "projector-transitions", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64, onError },
        transitionProjector(projectingStore, catalog, projected.transitions, onReject),
      ),
    );
    consumers.push(
      await startBatchConsumer(
        nc,
        topology.jsm,
        { stream: TOPOLOGY.samples.stream, durable: "projector-samples", filterSubject: TOPOLOGY.samples.subjects, maxBatch: 512, onError },
        sampleProjector(store, projected.samples, onReject),
      ),
    );
    const stopConsumers = async () => {
      for (const c of consumers) await c.stop();
    };
    undo.push(stopConsumers);
    const stopRetention = startRetention(store, baseClock);
    undo.push(stopRetention);
    // On-chain anchoring (methodology section 8): polls the store for receipts to commit, on wall-clock time.
    const anchor = await startAnchoring({ ...config.anchor, rpcUrl: config.sources.solanaRpcUrl, db: store.db, clock: baseClock, log });
    if (anchor !== null) undo.push(() => anchor.stop());


    // Webhook delivery, after the projectors: each acked transition is dispatched to the webhooks of its asset, and
    // the worker runs the attempts from PEG_DELIVERIES. Delivery timing is wall-clock time, whatever the feed's clock.
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
    const worker = await startDeliveryWorker({
      nc,
      jsm: topology.jsm,
      db: store.db,
      keys: keyRing,
      now: () => baseClock.now(),
      timeScale: config.webhookTimeScale,
      log,
      ...(config.telegramBotToken === null ? {} : { telegram: { apiUrl: config.telegramApiUrl, botToken: config.telegramBotToken } }),
      ...(testOnly?.resolve === undefined ? {} : { resolve: testOnly.resolve }),
      ...(testOnly === undefined ? {} : { testOnly: { ...(testOnly.ca === undefined ? {} : { ca: testOnly.ca }), allowLoopback: testOnly.allowLoopback === true } }),
    });
    undo.push(() => worker.stop());
    // Key rotation requests (`peg-oracle webhook-keys rotate`) and re-reads after another process rotated.
    const keyAdmin = serveKeyAdmin(nc, keyRing, () => baseClock.now(), { log });
    undo.push(() => keyAdmin.stop());
    // Dispatch is a durable consumer of the transitions (from the next one, when first created): a transition
    // acknowledged just before a crash is dispatched after the restart, and one dispatched twice changes nothing.
    const dispatching = await startBatchConsumer(
      nc,
      topology.jsm,
      { stream: TOPOLOGY.transitions.stream, durable: "delivery-dispatch", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64, startAt: "new", onError },
      dispatchHandler(dispatcher, (id) => store.markDispatched(id, baseClock.now()), onReject),
    );
    undo.push(() => dispatching.stop());
    const stopDelivery = async () => {
      await keyAdmin.stop();
      await dispatching.stop();
      await dispatcher.idle();
      await worker.stop();
    };

    // Advisory loop exposure: simulated lending positions (same seed as the simulated market), refreshed every minute.
    const positions = new PositionsBook({ sources: [simulatedPositions({ assets: catalog.active, seed: config.simSeed })], clock, log });
    await positions.start();
    undo.push(() => positions.stop());

    let intakeOpen = true;
    const api = await startApi({
      config,
      catalog,
      clock,
      store,
      natsAlive: () => nc.rtt().then(() => true),
      engineAlive: () => intakeOpen,
      pendingAlert: (id) => pending.has(id),
      nc,
      machine: async (mint) => {
        try {
          const view = await requestMachineView(nc, mint);
          return view === null ? { kind: "unknown" } : { kind: "ok", view };
        } catch (e) {
          return { kind: "unavailable", reason: e instanceof Error ? e.message : String(e) };
        }
      },
      log,
      webhookKeys: (now) => keyRing.publicList(now),
      webhookDelivery: { test: (hook) => dispatcher.test(hook), replay: (hook, window) => dispatcher.replay(hook, window) },
      advisory: positions,
      ...(testOnly === undefined
        ? {}
        : { destinationsForTests: { ...(testOnly.resolve === undefined ? {} : { resolve: testOnly.resolve }), allowLoopbackForTests: testOnly.allowLoopback === true } }),
    });
    undo.push(() => api.close());
    log("info", "http listening", { host: config.host, port: api.port });
    acked.add(link.acked$.subscribe((a) => api.metrics.transitions.inc({ to_state: a.receipt.to_state })));

    // Intake last.
    const scenarioTime = config.feed.kind === "scenario";
    if ("start" in chosen) chosen.start?.();
    const intake = chosen.feed.subscribe({
      next: (s) => {
        api.metrics.samples.inc({ result: host.ingest(s, scenarioTime ? s.ts : clock.now()).status });
      },
      error: (e: unknown) => io.onFeedEnd?.(e),
      complete: () => io.onFeedEnd?.(null),
    });

    let stopping: Promise<void> | null = null;
    return {
      store,
      nc,
      host,
      link,
      recovery,
      natsUrl: servers[0]!,
      api,
      projected,
      delivery: { dispatcher, worker },
      anchor,
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
          }); // 1
          await step("stop the HTTP server", () => api.close());
          await step("stop the positions book", () => positions.stop());
          await step("drain actors and flush snapshots", () => link.close()); // 2-3
          await step("stop actors", () => {
            acked.unsubscribe();
            inspection.unsubscribe();
            host.stop();
          });
          await step("stop retention", () => stopRetention());
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
    await rollback();
    throw e;
  }
}

