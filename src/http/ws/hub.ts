/**
 * The live stream behind `/v1/ws` (addendum D), independent of the socket library: the uWS adapter (ws/uws.ts) and
 * the `ws`-library baseline of the benchmark drive the same hub.
 *
 * Fan-out uses pub/sub topics: `a/<mint>` per asset and `all` for clients subscribed to `*` (a client is in exactly
 * one of the two modes, so it never receives a message twice). The hub keeps the latest state per asset (for
 * snapshots) and a ring of the transitions of the last 24 h keyed by event-stream sequence (for `since_seq`).
 * A subscription replays from the ring, sends snapshots and joins the topics in one synchronous step, so nothing
 * published can fall between the replay and the live stream, and nothing is sent twice.
 */
import type { Catalog, CatalogAsset } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import { METHODOLOGY_VERSION, parseDecimal, riskScore, timestampToWire, type PegState } from "../../methodology/index.ts";
import { STALE_AFTER_MS } from "../routes/asset-card.ts";
import type { LiveState, LiveTransition, WsConnection, WsSession, WsTransport } from "./hub-ports.ts";
import {
  CLOSE,
  errorMessage,
  helloMessage,
  parseClientMessage,
  PING,
  PONG,
  ProtocolError,
  snapshotMessage,
  stateMessage,
  transitionMessage,
  WS_LIMITS,
  type AssetStateMessage,
  type WsErrorCode,
} from "./protocol.ts";
import { StateThrottle } from "./state-throttle.ts";
import { TransitionRing } from "./transition-ring.ts";

export type { LiveState, LiveTransition, WsConnection, WsSession, WsTransport } from "./hub-ports.ts";

export interface WsHubStats {
  readonly clients: number;
  readonly backpressureCloses: number;
  readonly limitCloses: number;
  readonly statesPublished: number;
  readonly transitionsPublished: number;
  readonly replayed: number;
  readonly ring: number;
}

export interface WsHubOptions {
  readonly catalog: Catalog;
  readonly clock: Clock;
  readonly transport: WsTransport;
  /** Transitions kept for `since_seq` beyond the 24 h window's count (default 200,000). */
  readonly maxRing?: number;
  /** Called when a client is closed for backpressure (the metric). */
  readonly onBackpressureClose?: () => void;
  /**
   * Wall-clock milliseconds for rate windows, state coalescing and the 24 h replay window (stream timestamps are wall
   * time). Default Date.now. `clock` (which a scenario runs faster) is only used for server_time and staleness.
   */
  readonly wall?: () => number;
}

const ALL = "all";
const HEARTBEAT_TOPIC = "hb";
const assetTopic = (mint: string) => `a/${mint}`;

export class WsHub {
  readonly #catalog: Catalog;
  readonly #clock: Clock;
  readonly #transport: WsTransport;
  readonly #onBackpressureClose: () => void;
  readonly #wall: () => number;
  readonly #sessions = new Set<WsSession>();
  /** Who listens to states (`#heard`); null after a subscription change, until recounted. */
  #audience: { readonly all: boolean; readonly mints: ReadonlySet<string> } | null = null;
  readonly #perIp = new Map<string, number>();
  readonly #latest = new Map<string, LiveState>();
  readonly #ring: TransitionRing;
  #seq = 0;
  readonly #states: StateThrottle;
  #timers: ReturnType<typeof setInterval>[] = [];
  /** Why the hub cannot see the stream now (`unavailable`), or null. */
  #unavailable: string | null = null;
  #stats = { backpressureCloses: 0, limitCloses: 0, statesPublished: 0, transitionsPublished: 0, replayed: 0 };

  constructor(opts: WsHubOptions) {
    this.#catalog = opts.catalog;
    this.#clock = opts.clock;
    this.#transport = opts.transport;
    this.#onBackpressureClose = opts.onBackpressureClose ?? (() => {});
    this.#wall = opts.wall ?? Date.now;
    this.#ring = new TransitionRing(opts.maxRing ?? 200_000, this.#wall);
    this.#states = new StateThrottle(WS_LIMITS.statesPerSecond, this.#wall);
  }

  /** The latest event-stream sequence the hub has seen. */
  get seq(): number {
    return this.#seq;
  }

  get stats(): WsHubStats {
    return { clients: this.#sessions.size, ring: this.#ring.size, ...this.#stats };
  }

  /** Starts the heartbeat and the backpressure sweep. */
  start(): void {
    if (this.#timers.length > 0) return;
    this.#timers.push(setInterval(() => this.#transport.publish(HEARTBEAT_TOPIC, PING), WS_LIMITS.heartbeatMs));
    this.#timers.push(setInterval(() => this.sweepBackpressure(), 100));
    for (const t of this.#timers) t.unref?.();
  }

  /** Stops the timers and closes every client with 1001 (going away). */
  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#states.stop();
    for (const s of [...this.#sessions]) this.#close(s, CLOSE.goingAway, "server shutting down");
  }

  /** The sequence from which the ring is complete (set by the feed after its back-fill from the stream). */
  coverFrom(seq: number): void {
    this.#ring.coverFrom(seq);
  }

  // ----------------------------------------------------------------------------------------------------------------
  // Connections.

  /**
   * While `why` is set this process cannot see the stream (its NATS link is cut, `upstream.ts`): every client gets an
   * `upstream_unavailable` error and is closed with 1013, so that it reconnects, with `since_seq`, to a process that
   * can; a new connection is refused the same way until `why` is null again. A client is never left connected and
   * blind.
   */
  unavailable(why: string | null): void {
    this.#unavailable = why;
    if (why === null) return;
    for (const s of [...this.#sessions]) {
      this.#error(s, "upstream_unavailable", why);
      this.#close(s, CLOSE.tryAgainLater, "upstream unavailable");
    }
  }

  /** A new connection: greets it, or refuses it (error then close) beyond the per-address limit or while unavailable. */
  connect(conn: WsConnection, ip: string): WsSession | null {
    if (this.#unavailable !== null) {
      conn.send(errorMessage("upstream_unavailable", this.#unavailable));
      conn.end(CLOSE.tryAgainLater, "upstream unavailable");
      return null;
    }
    const n = this.#perIp.get(ip) ?? 0;
    if (n >= WS_LIMITS.connectionsPerIp) {
      this.#stats.limitCloses++;
      conn.send(errorMessage("too_many_connections", `at most ${WS_LIMITS.connectionsPerIp} connections per address`));
      conn.end(CLOSE.policy, "too many connections");
      return null;
    }
    this.#perIp.set(ip, n + 1);
    const session: WsSession = { conn, ip, all: false, mints: new Set(), windowStart: 0, messages: 0, warned: false, closed: false };
    this.#sessions.add(session);
    conn.subscribe(HEARTBEAT_TOPIC);
    conn.send(helloMessage(this.#seq, timestampToWire(this.#clock.now()), METHODOLOGY_VERSION));
    return session;
  }

  /** The connection closed (by either side). Idempotent. */
  disconnect(session: WsSession): void {
    if (!this.#sessions.delete(session)) return;
    this.#audience = null;
    session.closed = true;
    const n = (this.#perIp.get(session.ip) ?? 1) - 1;
    if (n <= 0) this.#perIp.delete(session.ip);
    else this.#perIp.set(session.ip, n);
  }

  /** One client frame. Binary frames, bad JSON and unknown operations get an `invalid_message` error. */
  message(session: WsSession, text: string | null): void {
    if (session.closed) return;
    const now = this.#wall();
    if (now - session.windowStart >= 1000) {
      session.windowStart = now;
      session.messages = 0;
      session.warned = false;
    }
    session.messages++;
    if (session.messages > WS_LIMITS.messagesPerSecond) {
      if (session.messages > 5 * WS_LIMITS.messagesPerSecond) {
        this.#stats.limitCloses++;
        this.#close(session, CLOSE.policy, "message rate limit exceeded");
        return;
      }
      if (!session.warned) {
        session.warned = true;
        this.#error(session, "rate_limited", `at most ${WS_LIMITS.messagesPerSecond} messages per second; this one was ignored`);
      }
      return;
    }
    try {
      if (text === null) throw new ProtocolError("invalid_message", "text frames only");
      const op = parseClientMessage(text);
      if (op.op === "ping") session.conn.send(PONG);
      else if (op.op === "subscribe") this.#subscribe(session, op.assets, op.sinceSeq);
      else this.#unsubscribe(session, op.assets);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      this.#error(session, e.code, e.message);
    }
  }

  #error(session: WsSession, code: WsErrorCode, message: string): void {
    session.conn.send(errorMessage(code, message));
  }

  #close(session: WsSession, code: number, reason: string): void {
    if (session.closed) return;
    this.disconnect(session);
    session.conn.end(code, reason);
  }

  /** Closes every client with more than 1 MiB queued (1013, counted). Runs every 100 ms. */
  sweepBackpressure(): void {
    for (const s of this.#sessions) {
      if (s.conn.bufferedAmount() > WS_LIMITS.backpressureBytes) {
        this.#stats.backpressureCloses++;
        this.#onBackpressureClose();
        this.#close(s, CLOSE.tryAgainLater, "send backpressure above 1 MiB");
      }
    }
  }

  #resolve(symbols: readonly string[]): { all: boolean; mints: string[] } {
    if (symbols.includes("*")) return { all: true, mints: this.#catalog.active.map((a) => a.mint) };
    const unknown: string[] = [];
    const mints: string[] = [];
    for (const s of symbols) {
      const a = this.#catalog.bySymbol(s);
      if (a === undefined || !a.active) unknown.push(s);
      else if (!mints.includes(a.mint)) mints.push(a.mint);
    }
    if (unknown.length > 0) throw new ProtocolError("unknown_asset", `not tracked: ${unknown.slice(0, 10).map((s) => JSON.stringify(s)).join(", ")}`);
    return { all: false, mints };
  }

  #subscribe(session: WsSession, symbols: readonly string[], sinceSeq: number | null): void {
    this.#audience = null;
    const want = this.#resolve(symbols);
    const added = new Set<string>();
    if (want.all) {
      if (!session.all) for (const m of want.mints) if (!session.mints.has(m)) added.add(m);
    } else if (!session.all) {
      for (const m of want.mints) if (!session.mints.has(m)) added.add(m);
      if (session.mints.size + added.size > WS_LIMITS.assetsPerConnection) {
        throw new ProtocolError("too_many_assets", `at most ${WS_LIMITS.assetsPerConnection} assets per connection (subscribe to "*" for every asset)`);
      }
    }
    // 1. Missed transitions of the newly subscribed assets, in stream order.
    if (sinceSeq !== null && added.size > 0) {
      if (sinceSeq + 1 < this.#ring.coveredFrom && sinceSeq < this.#seq) {
        this.#error(session, "replay_truncated", `transitions before seq ${this.#ring.coveredFrom} are older than 24 h and are not replayed`);
      }
      for (const e of this.#ring.after(sinceSeq)) {
        if (added.has(e.mint)) {
          session.conn.send(e.text);
          this.#stats.replayed++;
        }
      }
    }
    // 2. Where each requested asset stands now.
    for (const m of want.mints) session.conn.send(snapshotMessage(this.#seq, this.#snapshotOf(m)));
    // 3. Live from here: nothing was published between 1 and 3 (this is one synchronous step).
    if (want.all) {
      if (!session.all) {
        for (const m of session.mints) session.conn.unsubscribe(assetTopic(m));
        session.mints.clear();
        session.all = true;
        session.conn.subscribe(ALL);
      }
    } else if (!session.all) {
      for (const m of added) {
        session.mints.add(m);
        session.conn.subscribe(assetTopic(m));
      }
    }
  }

  #unsubscribe(session: WsSession, symbols: readonly string[]): void {
    this.#audience = null;
    const drop = this.#resolve(symbols);
    if (drop.all) {
      if (session.all) session.conn.unsubscribe(ALL);
      for (const m of session.mints) session.conn.unsubscribe(assetTopic(m));
      session.all = false;
      session.mints.clear();
      return;
    }
    if (session.all) {
      // From "every asset" to an explicit list: every active asset but these.
      const rest = this.#catalog.active.map((a) => a.mint).filter((m) => !drop.mints.includes(m));
      if (rest.length > WS_LIMITS.assetsPerConnection) {
        throw new ProtocolError("too_many_assets", `unsubscribing these would leave ${rest.length} assets, more than ${WS_LIMITS.assetsPerConnection}; unsubscribe "*" instead`);
      }
      for (const m of rest) {
        session.mints.add(m);
        session.conn.subscribe(assetTopic(m));
      }
      session.all = false;
      session.conn.unsubscribe(ALL);
      return;
    }
    for (const m of drop.mints) if (session.mints.delete(m)) session.conn.unsubscribe(assetTopic(m));
  }

  #assetOf(mint: string): CatalogAsset | undefined {
    return this.#catalog.byMint(mint);
  }

  #view(a: CatalogAsset, s: LiveState | undefined): AssetStateMessage {
    if (s === undefined) return { asset: a.symbol, state: "UNKNOWN", discount: null, risk_score: null, updated_at: null };
    const stale = this.#clock.now() - s.at > STALE_AFTER_MS;
    const state: PegState = stale ? "UNKNOWN" : s.state;
    return {
      asset: a.symbol,
      state,
      discount: s.discount,
      risk_score: stale ? null : riskScore(state, parseDecimal(s.discount), a.class, a.thresholds),
      updated_at: timestampToWire(s.at),
    };
  }

  #snapshotOf(mint: string): AssetStateMessage {
    const a = this.#assetOf(mint)!;
    return this.#view(a, this.#latest.get(mint));
  }

  // ----------------------------------------------------------------------------------------------------------------
  // The feed (NATS in the service).

  /** Latest states known before the live feed (the store's snapshots at start). Newer live states win. */
  seed(states: Iterable<LiveState>): void {
    for (const s of states) {
      const cur = this.#latest.get(s.mint);
      if (cur === undefined || cur.at < s.at) this.#latest.set(s.mint, s);
    }
  }

  /** A published recompute: remembered, and pushed to subscribers at most 4 times per second per asset. */
  state(s: LiveState): void {
    const a = this.#assetOf(s.mint);
    if (a === undefined) return;
    const cur = this.#latest.get(s.mint);
    if (cur !== undefined && cur.at > s.at) return;
    this.#latest.set(s.mint, s);
    if (!this.#heard(s.mint)) return;
    this.#states.offer(s, (latest, now) => this.#publishState(a, latest, now));
  }

  /**
   * Whether any session listens to this asset's states (subscribed to it or to every asset). Recounted after any
   * subscription change: a state nobody hears is remembered (for the next subscriber's snapshot) but not rendered.
   */
  #heard(mint: string): boolean {
    if (this.#audience === null) {
      const mints = new Set<string>();
      let all = false;
      for (const session of this.#sessions) {
        all ||= session.all;
        for (const m of session.mints) mints.add(m);
      }
      this.#audience = { all, mints };
    }
    return this.#audience.all || this.#audience.mints.has(mint);
  }

  #publishState(a: CatalogAsset, s: LiveState, now: number): void {
    if (!this.#heard(s.mint)) return;
    this.#states.sent(s.mint, now);
    const text = stateMessage(this.#seq, this.#view(a, s));
    this.#transport.publish(assetTopic(s.mint), text);
    this.#transport.publish(ALL, text);
    this.#stats.statesPublished++;
  }

  /** A transition from the event stream, in stream order: kept for replays and pushed to subscribers. */
  transition(t: LiveTransition): void {
    if (t.seq <= this.#seq) return; // redelivered or older: already seen
    this.#seq = t.seq;
    const text = transitionMessage({
      seq: t.seq,
      alert_id: t.alert_id,
      asset: t.asset,
      from_state: t.from_state,
      to_state: t.to_state,
      discount: t.discount,
      ts: t.ts,
      receipt_url: `/v1/audit/${t.alert_id}`,
    });
    this.#ring.push({ seq: t.seq, mint: t.mint, at: t.at ?? this.#wall(), text });
    this.#transport.publish(assetTopic(t.mint), text);
    this.#transport.publish(ALL, text);
    this.#stats.transitionsPublished++;
  }
}
