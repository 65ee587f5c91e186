/**
 * `PegStream`: the live stream of `/v1/ws` (docs/websocket.md) that never loses or repeats a transition.
 *
 * The stream remembers the highest sequence it has delivered (`lastSeq`: a transition's `seq`, or the `seq` a
 * snapshot or state carries, which is the latest transition sequence when it was sent: every transition up to it
 * arrived before it on the same connection). Every (re)subscription sends `since_seq: lastSeq`, so the server replays
 * exactly what came after, then snapshots, then live. A transition at or below `lastSeq` is dropped: that covers an
 * API process that is behind the one the client left. Reconnects back off exponentially with jitter; a connection
 * that sends nothing (not even the server's 15 s ping) for `heartbeatTimeoutMs` is replaced.
 *
 * Buffering is bounded: each `for await` consumer has a queue, and when one holds more than `maxBuffered` events the
 * stream emits `slow`, closes the connection and stops reading (status `paused`). Nothing is lost by that: once the
 * consumers have worked their queues down to half, it reconnects with `since_seq` and the server replays the rest.
 *
 * The subscription can change on a live connection (`subscribe()` / `unsubscribe()`, stream-requests.ts): each change
 * resolves once the server has applied it, and every new connection is set up with the subscription as it then is.
 */
import { backoffDelay, type BackoffOptions } from "./backoff.ts";
import { defaultWebSocket } from "./default-websocket.ts";
import { Emitter } from "./emitter.ts";
import { Consumers } from "./event-queue.ts";
import { StreamConnection, type ConnectionOptions } from "./stream-connection.ts";
import { parseServerMessage, type ServerMessage } from "./stream-messages.ts";
import { StreamRequests } from "./stream-requests.ts";
import type { Subscription } from "./subscription-set.ts";
import {
  CLOSE_RESYNC,
  CLOSE_SLOW_CONSUMER,
  PegStreamError,
  streamUrl,
  type PegStreamEvents,
  type PegStreamOptions,
  type PegStreamStats,
  type StreamEvent,
  type StreamStatus,
  type StreamTimers,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./stream-options.ts";
/** Errors that refuse a request: fatal for the subscription a connection is set up with, a rejection for a change. */
const REFUSALS: ReadonlySet<string> = new Set(["unknown_asset", "too_many_assets", "invalid_message"]);

const defaultTimers: StreamTimers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * The live stream: transitions (each exactly once, in sequence order, across reconnects and server restarts),
 * snapshots and state updates of the subscribed assets.
 *
 * @example
 * ```ts
 * import WebSocket from "ws";                                   // Node 20; browsers have their own
 * const stream = new PegStream({ url: "http://localhost:8080", assets: ["*"], WebSocket });
 * stream.on("status", (s) => console.error("stream", s.status));
 * await stream.connected();                                     // subscribed: the snapshots are queued
 * await stream.subscribe(["USDC"]);                             // later, on the same connection
 * for await (const ev of stream) {
 *   if (ev.type === "transition") console.log(ev.seq, ev.asset, ev.from_state, "->", ev.to_state);
 * }
 * ```
 */
export class PegStream implements AsyncIterable<StreamEvent> {
  readonly url: string;
  /** The assets given to the constructor; `subscription` is what the stream delivers now. */
  readonly assets: readonly string[];
  #Ctor: WebSocketConstructor | null;
  readonly #backoff: BackoffOptions;
  readonly #connection: ConnectionOptions;
  readonly #maxBuffered: number;
  readonly #timers: StreamTimers;
  readonly #now: () => number;
  readonly #random: () => number;

  #conn: StreamConnection | null = null;
  #status: StreamStatus = "connecting";
  #lastSeq: number | null;
  #attempt = 0;
  /** Connection attempts made, the first included: only the first is `connecting`. */
  #connectAttempts = 0;
  #retryTimer: unknown = null;
  readonly #consumers = new Consumers<StreamEvent>(() => this.#maybeResume());
  readonly #events = new Emitter<PegStreamEvents>();
  #stats = { connections: 0, transitions: 0, duplicatesDropped: 0, pauses: 0 };
  #closedResolve!: () => void;
  readonly #closed: Promise<void>;
  #fatal: PegStreamError | null = null;
  readonly #requests: StreamRequests;

  constructor(options: PegStreamOptions) {
    this.#Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket ?? null;
    this.url = streamUrl(options.url);
    this.assets = [...(options.assets ?? ["*"])];
    if (this.assets.length === 0) throw new TypeError("assets must name at least one symbol (or \"*\")");
    const since = options.sinceSeq ?? null;
    if (since !== null && !(Number.isSafeInteger(since) && since >= 0)) throw new RangeError("sinceSeq must be a non-negative integer");
    this.#lastSeq = since;
    this.#backoff = options.backoff ?? {};
    this.#maxBuffered = Math.max(1, options.maxBuffered ?? 10_000);
    this.#timers = options.timers ?? defaultTimers;
    this.#now = options.now ?? Date.now;
    this.#connection = { heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 40_000, pingIntervalMs: options.pingIntervalMs ?? 20_000, timers: this.#timers, now: this.#now };
    this.#random = options.random ?? Math.random;
    this.#closed = new Promise((r) => (this.#closedResolve = r));
    this.#requests = new StreamRequests(
      {
        send: (msg) => this.#conn?.send(msg) ?? false,
        timers: this.#timers,
        now: this.#now,
        lastSeq: () => this.#lastSeq,
        resync: () => {
          this.#drop(CLOSE_RESYNC, "a message was rate limited: setting the subscription up again");
          this.#scheduleReconnect();
        },
      },
      this.assets,
    );
    // Connect on the next turn, so listeners added right after construction see everything from the first status.
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = null;
      if (this.#Ctor !== null) return this.#connect();
      // No WebSocket given and no global one (Node 20): the optional peer `ws`, loaded once.
      defaultWebSocket().then(
        (Ctor) => {
          this.#Ctor = Ctor;
          if (this.#status !== "closed") this.#connect();
        },
        (e: unknown) => this.#shutdown(new PegStreamError("websocket_unavailable", e instanceof Error ? e.message : String(e), true)),
      );
    }, 0);
  }

  get status(): StreamStatus {
    return this.#status;
  }

  /** The resume point: the highest sequence delivered so far (persist it to resume a later run with `sinceSeq`). */
  get lastSeq(): number | null {
    return this.#lastSeq;
  }

  get stats(): PegStreamStats {
    return { ...this.#stats };
  }

  /**
   * What the stream delivers now: every asset (`all: true`) but `except`, or exactly `assets`. It starts as the
   * constructor's `assets` and changes as `subscribe()` / `unsubscribe()` calls are applied.
   */
  get subscription(): Subscription {
    return this.#requests.subscription;
  }

  /**
   * Resolves once the stream is subscribed on an open connection: the server has greeted it, applied the
   * subscription and sent its replay and snapshots (they are delivered before this resolves). At once when it is now.
   * It waits through reconnects; it rejects with the `PegStreamError` that closed the stream (a refused
   * subscription, or `closed` after `close()`), or with the signal's reason.
   *
   * @example
   * ```ts
   * const stream = new PegStream({ url: "http://localhost:8080", assets: ["USDC"] });
   * await stream.connected({ signal: AbortSignal.timeout(10_000) });   // throws if not connected within 10 s
   * ```
   */
  connected(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (this.#status === "closed") return Promise.reject(this.#fatal ?? closedError());
    return this.#requests.whenReady(options.signal);
  }

  /**
   * Adds assets on the live connection (`"*"`: every asset), without reconnecting. Resolves once the server has
   * applied it: the new assets' transitions after `lastSeq` and their snapshots are delivered first. Rejects with a
   * `PegStreamError` the server refused it with (`unknown_asset`, `too_many_assets`: nothing changed, the stream
   * carries on), or `closed`. Made while disconnected, it is applied when the stream connects. Changes apply in the
   * order they are made, and every later connection subscribes to the result.
   *
   * @example
   * ```ts
   * const stream = new PegStream({ url: "http://localhost:8080", assets: ["USDC"] });
   * await stream.subscribe(["USDT", "PYUSD"]);
   * console.log(stream.subscription);                             // { all: false, assets: ["USDC", "USDT", "PYUSD"] }
   * ```
   */
  subscribe(assets: readonly string[]): Promise<void> {
    if (this.#status === "closed") return Promise.reject(this.#fatal ?? closedError());
    return this.#requests.change("subscribe", assets);
  }

  /**
   * Removes assets on the live connection (`"*"`: all of them). Resolves once the server has applied it; what it had
   * sent before is still delivered, nothing after. Unsubscribing some assets while subscribed to `"*"` keeps every
   * other one (`subscription` is then `{ all: true, except }`; the server then holds the list of the other active
   * assets, and refuses with `too_many_assets` if there are more than 200). Rejects like `subscribe()`.
   *
   * @example
   * ```ts
   * const stream = new PegStream({ url: "http://localhost:8080", assets: ["*"] });
   * await stream.unsubscribe(["USDT"]);                           // every asset but USDT
   * ```
   */
  unsubscribe(assets: readonly string[]): Promise<void> {
    if (this.#status === "closed") return Promise.reject(this.#fatal ?? closedError());
    return this.#requests.change("unsubscribe", assets);
  }

  /** Resolves once the stream is closed (by `close()` or a fatal error; then with that error, never rejecting). */
  closed(): Promise<PegStreamError | null> {
    return this.#closed.then(() => this.#fatal);
  }

  /** Adds a listener; returns a function that removes it. Listeners run synchronously, in arrival order. */
  on<K extends keyof PegStreamEvents>(event: K, listener: (payload: PegStreamEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  off<K extends keyof PegStreamEvents>(event: K, listener: (payload: PegStreamEvents[K]) => void): void {
    this.#events.off(event, listener);
  }

  /** Closes the connection for good. `for await` loops finish with the events already queued. Idempotent. */
  close(): void {
    this.#shutdown(null);
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent, undefined> {
    return this.#consumers.iterator(this.#status === "closed", this.#fatal ?? undefined);
  }

  // ----------------------------------------------------------------------------------------------------------------

  #setStatus(status: Exclude<StreamStatus, "reconnecting">, attempt = this.#attempt): void {
    this.#status = status;
    this.#events.emit("status", { status, attempt, delayMs: 0 });
  }

  /** The next attempt is due in `delayMs`: announced once, as a status and as the `reconnecting` event. */
  #reconnecting(delayMs: number): void {
    this.#attempt++;
    this.#status = "reconnecting";
    const attempt = this.#attempt;
    this.#events.emit("status", { status: "reconnecting", attempt, delayMs });
    this.#events.emit("reconnecting", { attempt, delayMs });
  }

  #connect(): void {
    this.#clearRetry();
    // Only the first attempt is announced here; a later one was, once, when it was scheduled.
    if (this.#connectAttempts++ === 0) this.#setStatus("connecting");
    let ws: WebSocketLike;
    try {
      ws = new this.#Ctor!(this.url);
    } catch (e) {
      this.#events.emit("disconnect", { code: 1006, reason: e instanceof Error ? e.message : String(e) });
      this.#scheduleReconnect();
      return;
    }
    this.#conn = new StreamConnection(ws, this.#connection, {
      open: () => {
        this.#stats.connections++;
        this.#requests.opened();
        this.#setStatus("open");
      },
      frame: (data) => this.#frame(data),
      closed: (code, reason) => this.#lost(code, reason),
      idle: () => this.#requests.heartbeat(),
    });
  }

  /** The connection ended (closed by the server or the network, or given up as silent): reconnect. */
  #lost(code: number, reason: string): void {
    this.#conn = null;
    this.#requests.lost();
    this.#events.emit("disconnect", { code, reason });
    this.#scheduleReconnect();
  }

  /** Closes the current connection on our side; its late events are ignored. */
  #drop(code: number, reason: string): void {
    const conn = this.#conn;
    this.#conn = null;
    if (conn === null) return;
    conn.drop(code, reason);
    this.#requests.lost();
    this.#events.emit("disconnect", { code, reason });
  }

  #clearRetry(): void {
    if (this.#retryTimer !== null) this.#timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
  }

  #scheduleReconnect(): void {
    this.#clearRetry();
    if (this.#status === "closed" || this.#status === "paused") return;
    const delayMs = backoffDelay(this.#attempt, this.#backoff, this.#random);
    this.#reconnecting(delayMs);
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = null;
      if (this.#status === "reconnecting") this.#connect();
    }, delayMs);
  }

  #frame(data: unknown): void {
    const text = typeof data === "string" ? data : data instanceof ArrayBuffer || ArrayBuffer.isView(data) ? new TextDecoder().decode(data as ArrayBuffer) : null;
    const msg: ServerMessage | null = text === null ? null : parseServerMessage(text);
    if (msg === null) {
      this.#events.emit("error", new PegStreamError("unreadable_message", `skipped a frame that is not a known server message: ${String(text ?? "(binary)").slice(0, 120)}`, false));
      return;
    }
    switch (msg.type) {
      case "ping":
        return;
      case "pong":
        this.#requests.pong();
        return;
      case "hello":
        // The server answers: the next outage starts its backoff from the beginning.
        this.#attempt = 0;
        this.#events.emit("hello", msg);
        return;
      case "error": {
        // A refusal answers the oldest request not yet acknowledged: a change's goes to its caller only.
        const target = REFUSALS.has(msg.error) ? this.#requests.refused(new PegStreamError(msg.error, msg.message, false)) : "none";
        if (target === "change") return;
        const err = new PegStreamError(msg.error, msg.message, target === "setup");
        this.#events.emit("error", err);
        if (err.fatal) this.#shutdown(err);
        else if (msg.error === "rate_limited") this.#requests.rateLimited();
        return;
      }
      case "transition":
        // An asset no longer (or not yet) subscribed: what the server sent before the change, or a replay of an
        // asset left out of "every asset" on a new connection.
        if (!this.#requests.wants(msg.asset)) return;
        if (this.#lastSeq !== null && msg.seq <= this.#lastSeq) {
          this.#stats.duplicatesDropped++;
          return;
        }
        this.#lastSeq = msg.seq;
        this.#stats.transitions++;
        this.#events.emit("transition", msg);
        this.#deliver(msg);
        return;
      case "snapshot":
      case "state":
        if (!this.#requests.wants(msg.asset)) return;
        if (this.#lastSeq === null || msg.seq > this.#lastSeq) this.#lastSeq = msg.seq;
        if (msg.type === "snapshot") this.#events.emit("snapshot", msg);
        else this.#events.emit("state", msg);
        this.#deliver(msg);
        return;
    }
  }

  #deliver(ev: StreamEvent): void {
    const most = this.#consumers.push(ev);
    if (most > this.#maxBuffered && this.#status === "open") this.#pause(most);
  }

  #pause(buffered: number): void {
    this.#stats.pauses++;
    this.#clearRetry();
    this.#drop(CLOSE_SLOW_CONSUMER, "consumer too slow");
    this.#setStatus("paused", 0);
    this.#events.emit("slow", { buffered, lastSeq: this.#lastSeq });
  }

  #maybeResume(): void {
    if (this.#status !== "paused") return;
    if (!this.#consumers.atMost(this.#maxBuffered / 2)) return;
    this.#attempt = 0;
    this.#reconnecting(0);
    this.#connect();
  }

  #shutdown(error: PegStreamError | null): void {
    if (this.#status === "closed") return;
    this.#fatal = error;
    this.#clearRetry();
    this.#conn?.drop(1000, error === null ? "client closed" : error.code);
    this.#conn = null;
    this.#requests.close(error ?? closedError());
    this.#consumers.end(error ?? undefined);
    this.#setStatus("closed");
    this.#closedResolve();
  }
}

function closedError(): PegStreamError {
  return new PegStreamError("closed", "the stream is closed", true);
}
