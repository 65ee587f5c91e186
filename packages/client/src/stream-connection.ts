/**
 * One WebSocket connection of a `PegStream`: its events passed on while it is current, a watch that gives it up when
 * nothing arrives for `heartbeatTimeoutMs` (a half-open TCP connection, or one that never opens), and the client's
 * keep-alive ping when it is idle, so proxies keep it open. Once dropped, nothing of it reaches the stream again.
 */
import { CLOSE_HEARTBEAT, type StreamTimers, type WebSocketLike } from "./stream-options.ts";

const OPEN = 1;

/** What the connection tells its stream. After `drop()` or `closed`, it says nothing more. */
export interface ConnectionEvents {
  open(): void;
  frame(data: unknown): void;
  /** It ended: the server or the network closed it, or nothing arrived for `heartbeatTimeoutMs` (4001, closed by us). */
  closed(code: number, reason: string): void;
  /** Nothing was sent for `pingIntervalMs`: time for a keep-alive ping. */
  idle(): void;
}

export interface ConnectionOptions {
  readonly heartbeatTimeoutMs: number;
  readonly pingIntervalMs: number;
  readonly timers: StreamTimers;
  readonly now: () => number;
}

export class StreamConnection {
  readonly #ws: WebSocketLike;
  readonly #o: ConnectionOptions;
  readonly #events: ConnectionEvents;
  #current = true;
  #lastFrameAt: number;
  #lastPingAt = 0;
  #watchTimer: unknown = null;

  constructor(ws: WebSocketLike, options: ConnectionOptions, events: ConnectionEvents) {
    this.#ws = ws;
    this.#o = options;
    this.#events = events;
    this.#lastFrameAt = options.now();
    ws.onopen = () => {
      if (!this.#current) return;
      this.#lastFrameAt = this.#o.now();
      this.#lastPingAt = this.#lastFrameAt;
      this.#events.open();
    };
    ws.onmessage = (ev) => {
      if (!this.#current) return;
      this.#lastFrameAt = this.#o.now();
      this.#events.frame(ev.data);
    };
    ws.onclose = (ev) => {
      if (!this.#current) return;
      this.#end();
      this.#events.closed(ev.code, ev.reason);
    };
    // A close event always follows an error: the stream reconnects there.
    ws.onerror = () => {};
    this.#watch();
  }

  /** Sends `msg` as JSON; false when the socket is not open (or is closing under us: its close event follows). */
  send(msg: object): boolean {
    if (!this.#current || this.#ws.readyState !== OPEN) return false;
    try {
      this.#ws.send(JSON.stringify(msg));
      return true;
    } catch {
      return false;
    }
  }

  /** Closes it from our side. No event of it reaches the stream afterwards. Idempotent. */
  drop(code: number, reason: string): void {
    if (!this.#current) return;
    this.#end();
    try {
      this.#ws.close(code, reason);
    } catch {
      // already closing
    }
  }

  #end(): void {
    this.#current = false;
    if (this.#watchTimer !== null) this.#o.timers.clearTimeout(this.#watchTimer);
    this.#watchTimer = null;
    // An error handler stays: the `ws` package throws on an unhandled error event.
    this.#ws.onopen = null;
    this.#ws.onmessage = null;
    this.#ws.onclose = null;
    this.#ws.onerror = () => {};
  }

  #watch(): void {
    const { heartbeatTimeoutMs, pingIntervalMs } = this.#o;
    const every = Math.max(50, Math.min(pingIntervalMs, Math.floor(heartbeatTimeoutMs / 4)));
    this.#watchTimer = this.#o.timers.setTimeout(() => {
      this.#watchTimer = null;
      if (!this.#current) return;
      const now = this.#o.now();
      if (now - this.#lastFrameAt > heartbeatTimeoutMs) {
        this.drop(CLOSE_HEARTBEAT, "heartbeat timeout");
        this.#events.closed(CLOSE_HEARTBEAT, "heartbeat timeout");
        return;
      }
      if (this.#ws.readyState === OPEN && now - this.#lastPingAt >= pingIntervalMs) {
        this.#lastPingAt = now;
        this.#events.idle();
      }
      this.#watch();
    }, every);
  }
}
