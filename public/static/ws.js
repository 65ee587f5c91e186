// The dashboard's live connection to /v1/ws: the client package's PegStream (@peg-oracle/client, the one resume
// implementation: subscribe, since_seq resume with no transition lost or repeated, backoff with jitter, heartbeat),
// plus what the pages add on top: the server clock offset, the connection indicator's status names, and one message
// callback. In the browser the import map loads the package's browser module (/static/vendor/peg-client.js); under
// Node the specifier resolves to the package. No DOM: the WebSocket constructor, the timers and the clock are
// injectable, so the tests drive it with fakes.

import { PegStream } from "@peg-oracle/client";

/** The dashboard's reconnect ceiling (the package's default is 30 s): an operator's view comes back sooner. */
const BACKOFF = Object.freeze({ maxMs: 10_000 });

/** PegStream's statuses as the connection indicator (`#conn`, dom.js showConnection) names them. */
const STATUS = Object.freeze({ connecting: "connecting", open: "connected", reconnecting: "reconnecting", paused: "reconnecting", closed: "closed" });

/** The WebSocket URL of the page's origin: ws:// under http, wss:// under https. */
export function wsUrl(loc, path = "/v1/ws") {
  return `${loc.protocol === "https:" ? "wss:" : "ws:"}//${loc.host}${path}`;
}

/**
 * One live subscription of a page.
 *
 * Options: `url`, `assets` (symbols or ["*"]), `onMessage(msg)` (hello, snapshot, state and transition messages as
 * the server sent them, each transition once; and the server's errors as `{ type: "error", error, message }`),
 * `onStatus(status, detail)` with status "connecting" | "connected" | "reconnecting" (detail = { attempt, delayMs })
 * | "closed"; and for tests `WebSocketImpl`, `timers` ({ setTimeout, clearTimeout }), `now`, `random`.
 */
export class LiveSocket {
  constructor(options) {
    this.url = options.url;
    this.assets = options.assets ?? ["*"];
    this.onMessage = options.onMessage ?? (() => {});
    this.onStatus = options.onStatus ?? (() => {});
    this.now = options.now ?? (() => Date.now());
    this.streamOptions = {
      ...(options.WebSocketImpl ? { WebSocket: options.WebSocketImpl } : {}),
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.random ? { random: options.random } : {}),
      now: this.now,
      backoff: BACKOFF,
    };
    /** server_time - local time at the last hello, in ms (for countdowns against the server clock). */
    this.clockOffsetMs = 0;
    /** The PegStream while started. */
    this.stream = null;
    this.resumeFrom = null;
  }

  /** The highest sequence delivered (PegStream's resume point), kept across stop() and start(). */
  get lastSeq() {
    return this.stream?.lastSeq ?? this.resumeFrom;
  }

  start() {
    if (this.stream !== null) return;
    const stream = new PegStream({ url: this.url, assets: this.assets, sinceSeq: this.resumeFrom, ...this.streamOptions });
    this.stream = stream;
    stream.on("status", (s) => this.onStatus(STATUS[s.status] ?? s.status, { attempt: s.attempt, delayMs: s.delayMs }));
    stream.on("hello", (msg) => {
      const t = Date.parse(msg.server_time);
      if (!Number.isNaN(t)) this.clockOffsetMs = t - this.now();
      this.onMessage(msg);
    });
    const onState = (msg) => {
      // A scenario runs the server's clock faster than ours: never let the estimate fall behind what it published.
      const u = typeof msg.updated_at === "string" ? Date.parse(msg.updated_at) : NaN;
      if (!Number.isNaN(u) && u > this.now() + this.clockOffsetMs) this.clockOffsetMs = u - this.now();
      this.onMessage(msg);
    };
    stream.on("snapshot", onState);
    stream.on("state", onState);
    stream.on("transition", (msg) => this.onMessage(msg));
    stream.on("error", (e) => {
      // The server's errors; a frame the client could not read is skipped, as before.
      if (e.code !== "unreadable_message") this.onMessage({ type: "error", error: e.code, message: e.message, fatal: e.fatal });
    });
  }

  /** Closes the connection for good (status "closed"); start() again resumes from `lastSeq`. */
  stop() {
    const stream = this.stream;
    if (stream === null) return;
    this.resumeFrom = stream.lastSeq;
    this.stream = null;
    stream.close();
  }
}
