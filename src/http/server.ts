import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import type { Catalog } from "../catalog/index.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { SecretBox } from "../secret-box.ts";
import { latestStates, type Store } from "../store/index.ts";
import { createMetrics, serveMetrics, type Metrics } from "./metrics.ts";
import { createPipeline } from "./pipeline.ts";
import { CURSOR_KEY_PURPOSE, cursorCodec } from "./cursor.ts";
import { createStoreAccountsModel, type WebhookDeliveryControl } from "./accounts-model.ts";
import { createStoreReadModel } from "./read-model-store.ts";
import type { MachineLookup, ReadModel, Readiness } from "./read-model.ts";
import { Router, type Route } from "./router.ts";
import { publicRoutes, type DocumentedRoute, type MeRouteOptions, type PublicRoutesOptions } from "./routes/index.ts";
import { serveUws, type UwsServer } from "./uws-adapter.ts";
import { loadStaticFiles } from "./static.ts";
import { attachStatic } from "./static-uws.ts";
import { WsHub } from "./ws/hub.ts";
import { watchUpstream, type UpstreamWatch } from "./ws/upstream.ts";
import { WS_LIMITS } from "./ws/protocol.ts";
import { attachWs, uwsTransport } from "./ws/uws.ts";
import type { Observable } from "rxjs";
import { startLiveFeed, type LiveFeed, type LiveSink, type LiveState } from "../streams/jetstream/live-feed.ts";
import type { NatsConnection } from "@nats-io/transport-node";

/** The 24-hour windows and calibration figures are aggregates over thousands of rows: cached briefly. */
const WINDOWS_TTL_MS = 30_000;
const CALIBRATION_TTL_MS = 5 * 60_000;
/** Latest snapshots and alert ids are at most this old in API answers. */
const SNAPSHOTS_TTL_MS = 1_000;

export interface ApiDeps {
  readonly config: Config;
  readonly catalog: Catalog;
  readonly clock: Clock;
  readonly store: Store;
  /** NATS answers (a round trip within the deadline). */
  readonly natsAlive: () => Promise<boolean>;
  /** The engine is running (intake subscribed, actors alive). */
  readonly engineAlive: () => boolean;
  /**
   * What start-up is still doing before the engine runs (e.g. "recovering actors"), or null: the HTTP listener opens
   * before the engine, and `/readyz` answers 503 with this as the engine's reason meanwhile.
   */
  readonly starting?: () => string | null;
  /**
   * Why the engine cannot keep up (its sample publish queue is full and samples are being dropped), or null. Makes
   * `/readyz` answer 503 with that reason.
   */
  readonly overload?: () => string | null;
  /** The engine link's sample publish queue, for /metrics. */
  readonly sampleQueue?: () => { readonly queued: number; readonly dropped: number; readonly skippedTicks?: number };
  /** JetStream acknowledged this alert id and the store has not projected it yet. */
  readonly pendingAlert: (id: string) => boolean;
  /** Called with each transition the WebSocket feed reads from PEG_TRANSITIONS (back-fill and live), in order. */
  readonly onStreamTransition?: (alertId: string) => void;
  readonly wsClients?: () => number;
  /** The NATS connection the WebSocket stream is fed from (peg.state.>, PEG_TRANSITIONS); absent: no /v1/ws. */
  readonly nc?: NatsConnection;
  /** This process decides every published recompute (ROLE=all): the WebSocket stream takes them from here, not peg.state.>. */
  readonly localStates?: Observable<LiveState>;
  /** Asks the engine for one asset's live actor (machine inspection). */
  readonly machine?: (mint: string) => Promise<MachineLookup>;
  readonly log?: (level: "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
  /** The deployment's secrets: the listings' cursors are signed under a key derived from them (src/http/cursor.ts). */
  readonly secrets: Pick<SecretBox, "derive">;
  /** The webhook signing keys served by /v1/meta/webhook-keys (the delivery worker's key ring); absent: none. */
  readonly webhookKeys?: PublicRoutesOptions["webhookKeys"];
  /** The delivery worker's test and replay entry points; absent: those routes answer 503. */
  readonly webhookDelivery?: WebhookDeliveryControl;
  /** The lending-positions book behind the advisory loop-exposure routes and the feed's `systemic`; absent: 503 / omitted. */
  readonly advisory?: PublicRoutesOptions["advisory"];
  /** Tests only: the webhook registration check's resolver and loopback allowance (a receiver on this machine). */
  readonly destinationsForTests?: MeRouteOptions;
  /**
   * Routes served beside the public ones but outside the REST contract and its OpenAPI document (the agent tools'
   * `/mcp` and `/x402/*`, interface 1.8), built over the public routes and the read model this API serves, so they
   * share its caches and /metrics registry.
   */
  readonly extraRoutes?: (ctx: { readonly routes: readonly DocumentedRoute[]; readonly readModel: ReadModel; readonly metrics: Metrics }) => readonly Route[];
}

export interface Api {
  readonly port: number;
  /** Port of the `/metrics` listener on METRICS_HOST (METRICS_PORT, or the free port picked for 0). */
  readonly metricsPort: number;
  readonly metrics: Metrics;
  readonly routes: readonly DocumentedRoute[];
  readonly readModel: ReadModel;
  /** The WebSocket hub (null without NATS). */
  readonly ws: WsHub | null;
  close(): Promise<void>;
}

interface Cached<T> {
  (now: number): Promise<T>;
  /** The value if it is loaded and within its TTL (the synchronous hot path), else undefined. */
  peek(): T | undefined;
}

function cached<T>(clock: Clock, ttlMs: number, load: (now: number) => Promise<T>): Cached<T> {
  let value: { at: number; v: Promise<T>; settled?: T } | null = null;
  const get = ((now: number) => {
    if (value === null || clock.now() - value.at > ttlMs) {
      const entry: { at: number; v: Promise<T>; settled?: T } = { at: clock.now(), v: load(now) };
      value = entry;
      entry.v.then(
        (x) => (entry.settled = x),
        () => {
          if (value === entry) value = null;
        },
      );
    }
    return value.v;
  }) as Cached<T>;
  get.peek = () => (value !== null && value.settled !== undefined && clock.now() - value.at <= ttlMs ? value.settled : undefined);
  return get;
}

async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)));
  try {
    return await Promise.race([p.catch(() => fallback), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The read model as the API serves it: snapshots and latest alert ids at most 1 s old (most requests read them; one
 * query per second serves them all), 24-hour windows 30 s, calibration 5 minutes.
 */
export function withReadCaches(base: ReadModel): ReadModel {
  const clock = base.clock;
  const windows = cached(clock, WINDOWS_TTL_MS, (now) => base.windows24h(now));
  const calibration = cached(clock, CALIBRATION_TTL_MS, (now) => base.calibration(now));
  const snapshots = cached(clock, SNAPSHOTS_TTL_MS, () => base.snapshots());
  const latestAlertIds = cached(clock, SNAPSHOTS_TTL_MS, () => base.latestAlertIds());
  return {
    ...base,
    windows24h: windows,
    calibration,
    snapshots: () => snapshots(clock.now()),
    latestAlertIds: () => latestAlertIds(clock.now()),
    peekSnapshots: () => snapshots.peek(),
    peekLatestAlertIds: () => latestAlertIds.peek(),
  };
}

/**
 * Builds the read model and the public routes and serves them on uWebSockets.js at HOST:PORT; `/metrics` has a
 * listener of its own at METRICS_HOST:METRICS_PORT (loopback by default), never the public port.
 */
export async function startApi(deps: ApiDeps): Promise<Api> {
  const { config, catalog, clock, store } = deps;
  const readiness = async (): Promise<Readiness> => {
    const reachable = await within(sql`select 1`.execute(store.db).then(() => true), 2_000, false);
    // Up means reachable and (embedded) with room to write: a full disk still answers reads.
    const room = store.hasRoom();
    const database = reachable && room;
    // A ping not answered within 2 s: NATS is down, or the connection is so backed up (an overload) that it may as well be.
    const natsState = await within<"up" | "down" | "slow">(
      deps.natsAlive().then(
        () => "up",
        () => "down",
      ),
      2_000,
      "slow",
    );
    const nats = natsState === "up";
    const newest = reachable ? await store.newestSnapshotAt() : null;
    const overload = deps.overload?.() ?? null;
    // While start-up runs the engine is not alive yet, whatever the last run left in the store.
    const starting = deps.starting?.() ?? null;
    const engine = starting === null && deps.engineAlive();
    const reasons = {
      ...(reachable ? (room ? {} : { database: "database has no room to write (disk full)" }) : { database: "database is unreachable or did not answer within 2 s" }),
      ...(natsState === "slow" ? { nats: "nats did not answer a ping within 2 s (down, or the connection is backed up)" } : natsState === "down" ? { nats: "nats is down" } : {}),
      ...(starting === null ? {} : { engine: `engine is starting: ${starting}` }),
    };
    return {
      database,
      nats,
      engine,
      ...(overload === null ? {} : { overloaded: overload }),
      snapshot_age_secs: newest === null ? null : Math.max(0, Math.floor((clock.now() - newest) / 1000)),
      ...(Object.keys(reasons).length === 0 ? {} : { reasons }),
    };
  };
  const base = createStoreReadModel({
    store,
    catalog,
    clock,
    config,
    readiness,
    pendingAlert: async (id) => deps.pendingAlert(id),
    ...(deps.machine === undefined ? {} : { machine: deps.machine }),
  });
  const readModel = withReadCaches(base);
  const metrics = createMetrics();
  const staticFiles = loadStaticFiles(fileURLToPath(new URL("../../public/", import.meta.url)));
  const transport = uwsTransport();
  let hub: WsHub | null = null;
  let feed: LiveFeed | null = null;
  let upstream: UpstreamWatch | null = null;
  if (deps.nc !== undefined) {
    hub = new WsHub({ catalog, clock, transport, onBackpressureClose: () => metrics.wsBackpressureCloses.inc() });
    const h = hub;
    // Only the state, discount and instant of each snapshot: the seed is on the way to the listener.
    const seeds = await latestStates(store.db).catch(() => []);
    h.seed(seeds.map((s) => ({ mint: s.mint, state: s.state, discount: s.discount, at: s.updated_at })));
    const seen = deps.onStreamTransition;
    const sink: LiveSink =
      seen === undefined
        ? h
        : {
            state: (s) => h.state(s),
            coverFrom: (seq) => h.coverFrom(seq),
            transition: (t) => {
              seen(t.alert_id);
              h.transition(t);
            },
          };
    feed = await startLiveFeed(deps.nc, sink, {
      ...(deps.localStates === undefined ? {} : { localStates: deps.localStates }),
      windowMs: WS_LIMITS.replayWindowMs,
      now: Date.now,
      log: (level, msg, fields) => {
        if (level === "warn" || level === "error") deps.log?.(level, msg, fields);
      },
    });
    await feed.ready;
    h.start();
    upstream = watchUpstream({
      ping: deps.natsAlive,
      onChange: (why) => {
        h.unavailable(why);
        if (why === null) deps.log?.("warn", "NATS answers again: WebSocket connections are accepted again");
        else deps.log?.("warn", "NATS does not answer: WebSocket clients closed (1013, upstream_unavailable) until it does", { why });
      },
    });
  }
  const wsClients = deps.wsClients ?? (hub === null ? undefined : () => hub.stats.clients);
  const routes = publicRoutes(readModel, {
    cursors: cursorCodec(deps.secrets.derive(CURSOR_KEY_PURPOSE)),
    accounts: { model: createStoreAccountsModel(store, deps.webhookDelivery), allowedPorts: config.webhookAllowedPorts, ...(deps.destinationsForTests ?? {}) },
    ...(deps.webhookKeys === undefined ? {} : { webhookKeys: deps.webhookKeys }),
    ...(wsClients === undefined ? {} : { wsClients }),
    ...(deps.advisory === undefined ? {} : { advisory: deps.advisory }),
  });
  const router = new Router([...routes, ...(deps.extraRoutes?.({ routes, readModel, metrics }) ?? [])]);
  let droppedSeen = 0;
  let skippedSeen = 0;
  const refreshMetrics = async (): Promise<void> => {
    const r = await readiness();
    metrics.up.set({ dependency: "store" }, r.database ? 1 : 0);
    metrics.up.set({ dependency: "nats" }, r.nats ? 1 : 0);
    metrics.wsClients.set(wsClients?.() ?? 0);
    const q = deps.sampleQueue?.();
    if (q !== undefined) {
      metrics.sampleQueue.set(q.queued);
      metrics.samplesDropped.inc(Math.max(0, q.dropped - droppedSeen));
      droppedSeen = Math.max(droppedSeen, q.dropped);
      metrics.ticksSkipped.inc(Math.max(0, (q.skippedTicks ?? 0) - skippedSeen));
      skippedSeen = Math.max(skippedSeen, q.skippedTicks ?? 0);
    }
  };
  const handle = createPipeline({
    router,
    clock,
    ratePerMinute: config.rateLimitPerMin,
    ipv6Prefix: config.rateLimitIpv6Prefix,
    corsOrigins: config.corsOrigins,
    onError: (e, req) => deps.log?.("error", "request failed", { path: req.path, error: e instanceof Error ? e.stack ?? e.message : String(e) }),
    observe: (route, method, status, ms) =>
      metrics.httpDuration.observe({ route: route ?? "unmatched", method, status: String(status) }, ms / 1000),
  });
  const server: UwsServer = await serveUws(handle, {
    host: config.host,
    port: config.port,
    trustProxy: config.trustProxy,
    trustedProxies: config.trustedProxies,
    onError: (e) => deps.log?.("error", "response failed", { error: e instanceof Error ? e.message : String(e) }),
    configure: (app) => {
      transport.bind(app);
      attachStatic(app, staticFiles);
      if (hub !== null) attachWs(app, hub, { trustProxy: config.trustProxy, trustedProxies: config.trustedProxies, ipv6Prefix: config.rateLimitIpv6Prefix });
    },
  });
  let metricsServer: UwsServer;
  try {
    metricsServer = await serveMetrics(metrics, refreshMetrics, {
      host: config.metricsHost,
      port: config.metricsPort,
      onError: (e) => deps.log?.("error", "metrics response failed", { error: e instanceof Error ? e.message : String(e) }),
    });
  } catch (e) {
    server.close();
    upstream?.stop();
    hub?.stop();
    await feed?.stop();
    throw new Error(`metrics listener (METRICS_HOST=${config.metricsHost}, METRICS_PORT=${config.metricsPort}): ${e instanceof Error ? e.message : String(e)}`);
  }
  return {
    port: server.port,
    metricsPort: metricsServer.port,
    metrics,
    routes,
    readModel,
    ws: hub,
    close: async () => {
      server.close();
      metricsServer.close();
      upstream?.stop();
      hub?.stop();
      await feed?.stop();
    },
  };
}
