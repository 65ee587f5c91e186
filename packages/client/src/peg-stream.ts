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
 */
import { backoffDelay, type BackoffOptions } from "./backoff.ts";
import { defaultWebSocket } from "./default-websocket.ts";
import { EventQueue } from "./event-queue.ts";
import { parseServerMessage, type ServerMessage } from "./stream-messages.ts";
import {
  CLOSE_HEARTBEAT,
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

const OPEN = 1;
const FATAL: ReadonlySet<string> = new Set(["unknown_asset", "too_many_assets", "invalid_message"]);

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
 * for await (const ev of stream) {
 *   if (ev.type === "transition") console.log(ev.seq, ev.asset, ev.from_state, "->", ev.to_state);
 * }
 * ```
 */
export class PegStream implements AsyncIterable<StreamEvent> {
  readonly url: string;
  readonly assets: readonly string[];
  #Ctor: WebSocketConstructor | null;
  readonly #backoff: BackoffOptions;
  readonly #heartbeatTimeoutMs: number;
  readonly #pingIntervalMs: number;
  readonly #maxBuffered: number;
  readonly #timers: StreamTimers;
  readonly #now: () => number;
  readonly #random: () => number;

  #ws: WebSocketLike | null = null;
  #status: StreamStatus = "connecting";
  #lastSeq: number | null;
  #attempt = 0;
  /** Connection attempts made, the first included: only the first is `connecting`. */
  #connectAttempts = 0;
  #retryTimer: unknown = null;
  #watchTimer: unknown = null;
  #lastFrameAt = 0;
  #lastPingAt = 0;
  readonly #queues = new Set<EventQueue<StreamEvent>>();
  readonly #listeners = new Map<keyof PegStreamEvents, Set<(payload: never) => void>>();
  #stats = { connections: 0, transitions: 0, duplicatesDropped: 0, pauses: 0 };
  #closedResolve!: () => void;
  readonly #closed: Promise<void>;
  #fatal: PegStreamError | null = null;

  constructor(options: PegStreamOptions) {
    this.#Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket ?? null;
    this.url = streamUrl(options.url);
    this.assets = [...(options.assets ?? ["*"])];
    if (this.assets.length === 0) throw new TypeError("assets must name at least one symbol (or \"*\")");
    const since = options.sinceSeq ?? null;
    if (since !== null && !(Number.isSafeInteger(since) && since >= 0)) throw new RangeError("sinceSeq must be a non-negative integer");
    this.#lastSeq = since;
    this.#backoff = options.backoff ?? {};
    this.#heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 40_000;
    this.#pingIntervalMs = options.pingIntervalMs ?? 20_000;
    this.#maxBuffered = Math.max(1, options.maxBuffered ?? 10_000);
    this.#timers = options.timers ?? defaultTimers;
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#closed = new Promise((r) => (this.#closedResolve = r));
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

  /** Resolves once the stream is closed (by `close()` or a fatal error; then with that error, never rejecting). */
  closed(): Promise<PegStreamError | null> {
    return this.#closed.then(() => this.#fatal);
  }

  /** Adds a listener; returns a function that removes it. Listeners run synchronously, in arrival order. */
  on<K extends keyof PegStreamEvents>(event: K, listener: (payload: PegStreamEvents[K]) => void): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => this.off(event, listener);
  }

  off<K extends keyof PegStreamEvents>(event: K, listener: (payload: PegStreamEvents[K]) => void): void {
    this.#listeners.get(event)?.delete(listener as (payload: never) => void);
  }

  /** Closes the connection for good. `for await` loops finish with the events already queued. Idempotent. */
  close(): void {
    this.#shutdown(null);
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent, undefined> {
    const queue = new EventQueue<StreamEvent>();
    if (this.#status === "closed") queue.end(this.#fatal ?? undefined);
    else this.#queues.add(queue);
    return {
      next: () => {
        const r = queue.next();
        this.#maybeResume();
        return r;
      },
      return: () => {
        this.#queues.delete(queue);
        queue.clear();
        queue.end();
        this.#maybeResume();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  // ----------------------------------------------------------------------------------------------------------------

  #emit<K extends keyof PegStreamEvents>(event: K, payload: PegStreamEvents[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const l of [...set]) {
      try {
        (l as (p: PegStreamEvents[K]) => void)(payload);
      } catch (e) {
        // A throwing listener must not corrupt the stream's bookkeeping: report it the way an EventTarget does.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  #setStatus(status: StreamStatus, attempt = this.#attempt, delayMs = 0): void {
    this.#status = status;
    this.#emit("status", { status, attempt, delayMs });
  }

  #connect(): void {
    this.#clearTimers();
    this.#setStatus(this.#connectAttempts++ === 0 ? "connecting" : "reconnecting");
    let ws: WebSocketLike;
    try {
      ws = new this.#Ctor!(this.url);
    } catch (e) {
      this.#emit("disconnect", { code: 1006, reason: e instanceof Error ? e.message : String(e) });
      this.#scheduleReconnect();
      return;
    }
    this.#ws = ws;
    this.#lastFrameAt = this.#now();
    ws.onopen = () => {
      if (this.#ws !== ws) return;
      this.#stats.connections++;
      this.#lastFrameAt = this.#now();
      this.#lastPingAt = this.#lastFrameAt;
      const subscribe: { op: "subscribe"; assets: readonly string[]; since_seq?: number } = { op: "subscribe", assets: this.assets };
      if (this.#lastSeq !== null) subscribe.since_seq = this.#lastSeq;
      this.#send(subscribe);
      this.#setStatus("open");
    };
    ws.onmessage = (ev) => {
      if (this.#ws !== ws) return;
      this.#lastFrameAt = this.#now();
      this.#frame(ev.data);
    };
    ws.onclose = (ev) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      detach(ws);
      this.#emit("disconnect", { code: ev.code, reason: ev.reason });
      this.#scheduleReconnect();
    };
    // A close event always follows an error: reconnecting happens there.
    ws.onerror = () => {};
    this.#watch();
  }

  #send(msg: object): void {
    const ws = this.#ws;
    if (ws === null || ws.readyState !== OPEN) return;
    try {
      ws.send(JSON.stringify(msg));
    } catch {
      // closing under us: the close event reconnects
    }
  }

  /** Heartbeat: replaces a silent connection (also one that never opens), and pings an open one. */
  #watch(): void {
    const every = Math.max(50, Math.min(this.#pingIntervalMs, Math.floor(this.#heartbeatTimeoutMs / 4)));
    this.#watchTimer = this.#timers.setTimeout(() => {
      this.#watchTimer = null;
      if (this.#ws === null) return;
      const now = this.#now();
      if (now - this.#lastFrameAt > this.#heartbeatTimeoutMs) {
        this.#drop(CLOSE_HEARTBEAT, "heartbeat timeout");
        this.#scheduleReconnect();
        return;
      }
      if (this.#ws.readyState === OPEN && now - this.#lastPingAt >= this.#pingIntervalMs) {
        this.#lastPingAt = now;
        this.#send({ op: "ping" });
      }
      this.#watch();
    }, every);
  }

  /** Closes the current connection on our side; its late events are ignored. */
  #drop(code: number, reason: string): void {
    const ws = this.#ws;
    this.#ws = null;
    if (ws === null) return;
    detach(ws);
    try {
      ws.close(code, reason);
    } catch {
      // already closing
    }
    this.#emit("disconnect", { code, reason });
  }

  #clearTimers(): void {
    if (this.#retryTimer !== null) this.#timers.clearTimeout(this.#retryTimer);
    if (this.#watchTimer !== null) this.#timers.clearTimeout(this.#watchTimer);
    this.#retryTimer = null;
    this.#watchTimer = null;
  }

  #scheduleReconnect(): void {
    this.#clearTimers();
    if (this.#status === "closed" || this.#status === "paused") return;
    const delayMs = backoffDelay(this.#attempt, this.#backoff, this.#random);
    this.#attempt++;
    this.#setStatus("reconnecting", this.#attempt, delayMs);
    this.#retryTimer = this.#timers.setTimeout(() => {
      this.#retryTimer = null;
      if (this.#status === "reconnecting") this.#connect();
    }, delayMs);
  }

  #frame(data: unknown): void {
    const text = typeof data === "string" ? data : data instanceof ArrayBuffer || ArrayBuffer.isView(data) ? new TextDecoder().decode(data as ArrayBuffer) : null;
    const msg: ServerMessage | null = text === null ? null : parseServerMessage(text);
    if (msg === null) {
      this.#emit("error", new PegStreamError("unreadable_message", `skipped a frame that is not a known server message: ${String(text ?? "(binary)").slice(0, 120)}`, false));
      return;
    }
    switch (msg.type) {
      case "ping":
      case "pong":
        return;
      case "hello":
        // The server answers: the next outage starts its backoff from the beginning.
        this.#attempt = 0;
        this.#emit("hello", msg);
        return;
      case "error": {
        const fatal = FATAL.has(msg.error);
        const err = new PegStreamError(msg.error, msg.message, fatal);
        this.#emit("error", err);
        if (fatal) this.#shutdown(err);
        return;
      }
      case "transition":
        if (this.#lastSeq !== null && msg.seq <= this.#lastSeq) {
          this.#stats.duplicatesDropped++;
          return;
        }
        this.#lastSeq = msg.seq;
        this.#stats.transitions++;
        this.#emit("transition", msg);
        this.#deliver(msg);
        return;
      case "snapshot":
      case "state":
        if (this.#lastSeq === null || msg.seq > this.#lastSeq) this.#lastSeq = msg.seq;
        if (msg.type === "snapshot") this.#emit("snapshot", msg);
        else this.#emit("state", msg);
        this.#deliver(msg);
        return;
    }
  }

  #deliver(ev: StreamEvent): void {
    let most = 0;
    for (const q of this.#queues) {
      q.push(ev);
      if (q.size > most) most = q.size;
    }
    if (most > this.#maxBuffered && this.#status === "open") this.#pause(most);
  }

  #pause(buffered: number): void {
    this.#stats.pauses++;
    this.#clearTimers();
    this.#drop(CLOSE_SLOW_CONSUMER, "consumer too slow");
    this.#setStatus("paused", 0, 0);
    this.#emit("slow", { buffered, lastSeq: this.#lastSeq });
  }

  #maybeResume(): void {
    if (this.#status !== "paused") return;
    for (const q of this.#queues) if (q.size > this.#maxBuffered / 2) return;
    this.#attempt = 0;
    this.#connect();
  }

  #shutdown(error: PegStreamError | null): void {
    if (this.#status === "closed") return;
    this.#fatal = error;
    this.#clearTimers();
    const ws = this.#ws;
    this.#ws = null;
    if (ws !== null) {
      detach(ws);
      try {
        ws.close(1000, error === null ? "client closed" : error.code);
      } catch {
        // already closing
      }
    }
    for (const q of this.#queues) q.end(error ?? undefined);
    this.#queues.clear();
    this.#setStatus("closed");
    this.#closedResolve();
  }
}

/** Stops listening to a socket we are done with; an error handler stays, as `ws` throws on an unhandled error event. */
function detach(ws: WebSocketLike): void {
  ws.onopen = null;
  ws.onmessage = null;
  ws.onclose = null;
  ws.onerror = () => {};
}
