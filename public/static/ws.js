// Live connection to /v1/ws (addendum D): subscribe, heartbeat, reconnect with exponential backoff, resume from
// the highest seq seen (so missed transitions are replayed), de-duplicate transitions by alert_id.
// No DOM: the WebSocket constructor and the timers are injectable, so the tests drive it with fakes.

/** Reconnect delay of attempt n (0-based): 0.5 s doubling, capped at 10 s. */
export function backoffDelay(attempt, baseMs = 500, maxMs = 10_000) {
  const n = Math.max(0, Math.floor(attempt));
  return Math.min(maxMs, baseMs * 2 ** Math.min(n, 30));
}

/** The WebSocket URL of the page's origin: ws:// under http, wss:// under https. */
export function wsUrl(loc, path = "/v1/ws") {
  return `${loc.protocol === "https:" ? "wss:" : "ws:"}//${loc.host}${path}`;
}

/** Remembers the last `limit` ids; `add` says whether an id is new. */
export class IdSet {
  constructor(limit = 5000) {
    this.limit = limit;
    this.ids = new Set();
  }

  add(id) {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value);
    return true;
  }

  has(id) {
    return this.ids.has(id);
  }
}

const OPEN = 1;

/**
 * One auto-reconnecting subscription.
 *
 * Options: `url`, `assets` (symbols or ["*"]), `onMessage(msg)` (every server message except duplicate
 * transitions and heartbeats), `onStatus(status, detail)` with status "connecting" | "connected" | "reconnecting"
 * (detail = { delayMs, attempt }) | "closed", and for tests `WebSocketImpl`, `timers`, `now`, `pingEveryMs`,
 * `idleMs` (no frame for this long: the connection is presumed dead and replaced).
 */
export class LiveSocket {
  constructor(options) {
    this.url = options.url;
    this.assets = options.assets ?? ["*"];
    this.onMessage = options.onMessage ?? (() => {});
    this.onStatus = options.onStatus ?? (() => {});
    this.WebSocketImpl = options.WebSocketImpl ?? globalThis.WebSocket;
    this.timers = options.timers ?? {
      setTimeout: (f, ms) => globalThis.setTimeout(f, ms),
      clearTimeout: (h) => globalThis.clearTimeout(h),
      setInterval: (f, ms) => globalThis.setInterval(f, ms),
      clearInterval: (h) => globalThis.clearInterval(h),
    };
    this.now = options.now ?? (() => Date.now());
    this.pingEveryMs = options.pingEveryMs ?? 20_000;
    this.idleMs = options.idleMs ?? 45_000;
    /** Highest event-stream seq received from snapshot/state/transition messages (hello's seq is not counted). */
    this.lastSeq = null;
    /** server_time - local time at the last hello, in ms (for countdowns against the server clock). */
    this.clockOffsetMs = 0;
    this.transitions = new IdSet();
    this.attempt = 0;
    this.ws = null;
    this.retryTimer = null;
    this.pingTimer = null;
    this.lastFrameAt = 0;
    this.stopped = true;
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    if (ws !== null) {
      detach(ws);
      try {
        ws.close(1000, "bye");
      } catch {
        // already closing
      }
    }
    this.onStatus("closed", {});
  }

  /** Changes the subscription; sent at once when connected, and used on every reconnect. */
  subscribe(assets) {
    this.assets = assets;
    this.sendSubscribe();
  }

  send(obj) {
    if (this.ws !== null && this.ws.readyState === OPEN) this.ws.send(JSON.stringify(obj));
  }

  sendSubscribe() {
    const msg = { op: "subscribe", assets: this.assets };
    if (this.lastSeq !== null) msg.since_seq = this.lastSeq;
    this.send(msg);
  }

  clearTimers() {
    if (this.retryTimer !== null) this.timers.clearTimeout(this.retryTimer);
    if (this.pingTimer !== null) this.timers.clearInterval(this.pingTimer);
    this.retryTimer = null;
    this.pingTimer = null;
  }

  connect() {
    this.clearTimers();
    this.onStatus(this.attempt === 0 ? "connecting" : "reconnecting", { attempt: this.attempt, delayMs: 0 });
    let ws;
    try {
      ws = new this.WebSocketImpl(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.lastFrameAt = this.now();
      this.sendSubscribe();
      this.pingTimer = this.timers.setInterval(() => this.heartbeat(), this.pingEveryMs);
      this.onStatus("connected", {});
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      this.lastFrameAt = this.now();
      this.handle(ev.data);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleReconnect();
    };
    ws.onerror = () => {
      // A close event follows; reconnecting happens there.
    };
  }

  heartbeat() {
    if (this.now() - this.lastFrameAt > this.idleMs) {
      // Nothing (not even the server's 15 s ping) for too long: replace the connection.
      const ws = this.ws;
      this.ws = null;
      if (ws !== null) {
        detach(ws);
        try {
          ws.close(4000, "idle");
        } catch {
          // ignore
        }
      }
      this.scheduleReconnect();
      return;
    }
    this.send({ op: "ping" });
  }

  scheduleReconnect() {
    this.clearTimers();
    if (this.stopped) return;
    const delayMs = backoffDelay(this.attempt);
    this.attempt++;
    this.onStatus("reconnecting", { attempt: this.attempt, delayMs });
    this.retryTimer = this.timers.setTimeout(() => {
      this.retryTimer = null;
      if (!this.stopped) this.connect();
    }, delayMs);
  }

  handle(data) {
    let msg;
    try {
      msg = JSON.parse(typeof data === "string" ? data : String(data));
    } catch {
      return;
    }
    if (msg === null || typeof msg !== "object") return;
    switch (msg.type) {
      case "ping":
      case "pong":
        return;
      case "hello": {
        this.attempt = 0; // the server is answering: the next outage starts its backoff from 0.5 s again
        const t = Date.parse(msg.server_time);
        if (!Number.isNaN(t)) this.clockOffsetMs = t - this.now();
        break;
      }
      case "transition":
        if (typeof msg.alert_id === "string" && !this.transitions.add(msg.alert_id)) {
          this.noteSeq(msg.seq);
          return;
        }
        this.noteSeq(msg.seq);
        break;
      case "snapshot":
      case "state": {
        this.noteSeq(msg.seq);
        // A scenario runs the server's clock faster than ours: never let the estimate fall behind what it published.
        const u = typeof msg.updated_at === "string" ? Date.parse(msg.updated_at) : NaN;
        if (!Number.isNaN(u) && u > this.now() + this.clockOffsetMs) this.clockOffsetMs = u - this.now();
        break;
      }
      default:
        break;
    }
    this.onMessage(msg);
  }

  noteSeq(seq) {
    if (typeof seq === "number" && Number.isFinite(seq) && (this.lastSeq === null || seq > this.lastSeq)) this.lastSeq = seq;
  }
}

function detach(ws) {
  ws.onopen = null;
  ws.onmessage = null;
  ws.onclose = null;
  ws.onerror = null;
}
