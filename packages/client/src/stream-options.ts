/**
 * The types around `PegStream`: its options (the WebSocket and timers it is given), its events and errors, and how it
 * turns a base URL into the stream's URL.
 */
import type { BackoffOptions } from "./backoff.ts";
import type { HelloMessage, SnapshotMessage, StateMessage, StreamServerErrorCode, TransitionMessage } from "./stream-messages.ts";

/** What `for await (const ev of stream)` yields. */
export type StreamEvent = TransitionMessage | SnapshotMessage | StateMessage;

/**
 * `connecting` (first attempt), `open` (connected; subscribed once `connected()` resolves), `reconnecting` (waiting
 * for, or making, another attempt), `paused` (consumer too slow), `closed`.
 */
export type StreamStatus = "connecting" | "open" | "reconnecting" | "paused" | "closed";

/**
 * The `status` event. `reconnecting` comes once per attempt, when it is scheduled: `attempt` counts from 1 since a
 * server last greeted the client, `delayMs` is the wait before it (0 when resuming after a pause). The others carry
 * the attempt count at that moment and no delay.
 */
export type StatusChange =
  | { readonly status: "reconnecting"; readonly attempt: number; readonly delayMs: number }
  | { readonly status: Exclude<StreamStatus, "reconnecting">; readonly attempt: number; readonly delayMs: 0 };

/** Handler parameters are checked bivariantly, so the DOM's and the `ws` package's WebSocket both fit. */
type Handler<E> = { bivarianceHack(event: E): void }["bivarianceHack"];

/** The part of the WebSocket API the stream uses (the browser's, Node 22's global, or the `ws` package's). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: Handler<unknown> | null;
  onmessage: Handler<{ readonly data: unknown }> | null;
  onclose: Handler<{ readonly code: number; readonly reason: string }> | null;
  onerror: Handler<unknown> | null;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** Timers, injectable for tests. */
export interface StreamTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface PegStreamOptions {
  /** `ws(s)://host:port/v1/ws`, or the service's base URL (`http://localhost:8080`: `/v1/ws` is appended). */
  readonly url: string;
  /** Symbols exactly as `/v1/assets` spells them, or `["*"]` for every active asset (default). */
  readonly assets?: readonly string[];
  /**
   * The last transition sequence already processed (e.g. persisted by an earlier run): the stream starts with the
   * transitions after it (up to 24 h back). Default null: snapshots and live from now.
   */
  readonly sinceSeq?: number | null;
  /**
   * The WebSocket implementation. Default `globalThis.WebSocket` (browsers, Node >= 22), else the `ws` package
   * (an optional peer dependency: `npm install ws` on Node 20), loaded when the stream first connects.
   */
  readonly WebSocket?: WebSocketConstructor;
  /** Reconnect backoff (default 0.5 s doubling to 30 s, equal jitter). */
  readonly backoff?: BackoffOptions;
  /** No frame for this long: the connection is presumed dead and replaced (default 40,000 ms; the server pings every 15 s). */
  readonly heartbeatTimeoutMs?: number;
  /** How often the client pings (`{"op":"ping"}`) so idle connections stay open through proxies (default 20,000 ms). */
  readonly pingIntervalMs?: number;
  /** Events one `for await` consumer may have queued before the stream pauses (default 10,000). */
  readonly maxBuffered?: number;
  readonly timers?: StreamTimers;
  /** Milliseconds clock for the heartbeat (default `Date.now`). */
  readonly now?: () => number;
  /** Uniform [0, 1) for the jitter (default `Math.random`). */
  readonly random?: () => number;
}

/**
 * Codes of the `error` event: the server's, plus `unreadable_message` (a frame the client could not parse; skipped) and
 * `websocket_unavailable` (fatal: no WebSocket was given, there is no global one and the optional `ws` cannot load).
 * `closed` is never an event: it rejects `connected()`, `subscribe()` and `unsubscribe()` once the stream is closed.
 */
export type StreamErrorCode = StreamServerErrorCode | "unreadable_message" | "websocket_unavailable" | "closed";

/**
 * A problem on the stream. `fatal` ones (the server refused the subscription: `unknown_asset`, `too_many_assets`,
 * `invalid_message`) close it, and a `for await` loop throws the error after the events queued before it; the
 * others are reported and the stream carries on (`replay_truncated`: transitions older than the server's 24 h window
 * were not replayed; `rate_limited`: the stream sets its subscription up again on a new connection;
 * `too_many_connections`: retried; `upstream_unavailable`: that server lost its link to the stream and closed the
 * connection, the stream reconnects and resumes after the last transition it delivered). A refused `subscribe()` /
 * `unsubscribe()` rejects with a non-fatal one instead.
 */
export class PegStreamError extends Error {
  constructor(
    readonly code: StreamErrorCode,
    message: string,
    readonly fatal: boolean,
  ) {
    super(message);
    this.name = "PegStreamError";
  }
}

/** Event name -> payload. */
export interface PegStreamEvents {
  transition: TransitionMessage;
  snapshot: SnapshotMessage;
  state: StateMessage;
  hello: HelloMessage;
  status: StatusChange;
  /** Once per reconnect attempt, when it is scheduled (with the `status` `reconnecting` of the same attempt). */
  reconnecting: { readonly attempt: number; readonly delayMs: number };
  /** A connection ended (`code` as the socket reported it; ours: 4001 heartbeat timeout, 4002 consumer too slow, 4003 resync). */
  disconnect: { readonly code: number; readonly reason: string };
  /** A consumer's queue passed `maxBuffered`: the connection is paused until the queues are down to half. */
  slow: { readonly buffered: number; readonly lastSeq: number | null };
  error: PegStreamError;
}

export interface PegStreamStats {
  /** Connections opened (the first included). */
  readonly connections: number;
  readonly transitions: number;
  /** Transitions dropped because their `seq` was already delivered. */
  readonly duplicatesDropped: number;
  /** Times the stream paused for a slow consumer. */
  readonly pauses: number;
}

/**
 * Close codes the client uses: a silent connection replaced, a connection paused for a slow consumer, and one
 * replaced because the server ignored a message (rate limited) whose answer it was waiting for.
 */
export const CLOSE_HEARTBEAT = 4001;
export const CLOSE_SLOW_CONSUMER = 4002;
export const CLOSE_RESYNC = 4003;

/** `ws(s)://…/v1/ws` from a ws(s) URL (kept as is when it has a path) or an http(s) base URL. */
export function streamUrl(url: string): string {
  const u = new URL(url);
  if (u.protocol === "http:") u.protocol = "ws:";
  else if (u.protocol === "https:") u.protocol = "wss:";
  else if (u.protocol !== "ws:" && u.protocol !== "wss:") throw new TypeError(`the stream URL must be ws(s):// or http(s)://, got ${url}`);
  if (u.pathname === "/" || u.pathname === "") u.pathname = "/v1/ws";
  return u.toString();
}
