/**
 * What a `PegStream` asks of the server on a connection: the subscription that sets the connection up, then the
 * caller's `subscribe()` / `unsubscribe()` changes, one at a time.
 *
 * The protocol (docs/websocket.md) has no request ids and no acknowledgement, but the server handles a connection's
 * messages in order and answers a ping with a pong. So each request is followed by a ping: the pong says the server
 * has applied it (and sent what it sends for it: replayed transitions, snapshots), and an `error` that arrives before
 * that pong is the request's answer. Pongs come back in the order of the pings, heartbeat pings included.
 *
 * The server ignores messages beyond 10 a second (with one `rate_limited` error), and an ignored ping would leave a
 * request unanswered for ever; so sends are paced well below that, and if a `rate_limited` arrives anyway the stream
 * reconnects (`resync`), which sets everything up again from what is known to be applied.
 */
import type { StreamTimers } from "./stream-options.ts";
import { SubscriptionSet } from "./subscription-set.ts";

/** At most SEND_MAX messages in any SEND_WINDOW_MS: under the server's 10 a second with room for jitter and a heartbeat. */
const SEND_WINDOW_MS = 1_250;
const SEND_MAX = 8;
const PING = { op: "ping" } as const;
/** The symbols (or `"*"`) one subscribe / unsubscribe may name: the server's 200 per connection, plus `"*"`. */
const MAX_ASSETS = 201;

/** A change the caller asked for, until the server has applied or refused it. */
interface Change {
  readonly op: "subscribe" | "unsubscribe";
  readonly assets: readonly string[];
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** Refused: its pong only frees the way for the next one. */
  refused: boolean;
  /** Applied, and being followed by a subscribe to `"*"` (see `pong`). */
  restoring: boolean;
}

/** What an outstanding ping's pong will answer. `fatal`: a refusal of it closes the stream. */
type Awaiting = { readonly kind: "heartbeat" } | { readonly kind: "setup"; readonly fatal: boolean; readonly last: boolean } | { readonly kind: "change"; readonly change: Change };

/** Who an `error` message answers. */
export type ErrorTarget = "setup" | "setup-step" | "change" | "none";

export interface StreamRequestsHost {
  /** Sends on the current connection (false when it cannot). */
  send(msg: object): boolean;
  readonly timers: StreamTimers;
  now(): number;
  lastSeq(): number | null;
  /** A message may have been ignored: reconnect, so nothing waits for an answer that will not come. */
  resync(): void;
}

export class StreamRequests {
  readonly #host: StreamRequestsHost;
  /** The subscription applied (or being set up on the current connection). */
  readonly #subs: SubscriptionSet;
  readonly #queue: Change[] = [];
  #current: Change | null = null;
  /** Per connection: the pings sent and not yet answered, oldest first, and when messages were sent. */
  #awaiting: Awaiting[] = [];
  #sentAt: number[] = [];
  #open = false;
  #ready = false;
  #paceTimer: unknown = null;
  /** Callers of `whenReady()`. */
  readonly #waiters = new Set<{ readonly resolve: () => void; readonly reject: (e: unknown) => void }>();

  constructor(host: StreamRequestsHost, assets: readonly string[]) {
    this.#host = host;
    this.#subs = new SubscriptionSet(assets);
  }

  get subscription(): SubscriptionSet["view"] {
    return this.#subs.view;
  }

  /** Whether the current connection is set up (its subscription acknowledged). */
  get ready(): boolean {
    return this.#ready;
  }

  /**
   * Whether events of `symbol` are wanted: subscribed, or being subscribed (its replay and snapshots arrive before
   * the pong). An unsubscribe takes effect when acknowledged: what the server sent before it is still delivered.
   */
  wants(symbol: string): boolean {
    if (this.#subs.wants(symbol)) return true;
    const c = this.#current;
    return c !== null && c.op === "subscribe" && !c.refused && (c.assets.includes("*") || c.assets.includes(symbol));
  }

  /** Resolves once a connection is set up (at once if it is now), or rejects with the signal's reason. */
  whenReady(signal?: AbortSignal): Promise<void> {
    if (this.#ready) return Promise.resolve();
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(waiter);
        reject(signal!.reason);
      };
      const settle = (f: () => void) => () => {
        signal?.removeEventListener("abort", onAbort);
        f();
      };
      const waiter = { resolve: settle(resolve), reject: (e: unknown) => settle(() => reject(e))() };
      this.#waiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Queues a change; it is sent once a connection is set up, after the changes before it. A TypeError for assets the
   * server would refuse as an invalid message (1 to 201 symbols of 1 to 64 characters).
   */
  change(op: "subscribe" | "unsubscribe", assets: readonly string[]): Promise<void> {
    if (!Array.isArray(assets) || assets.length === 0 || assets.length > MAX_ASSETS || !assets.every((a) => typeof a === "string" && a.length >= 1 && a.length <= 64)) {
      return Promise.reject(new TypeError(`${op}: assets must be 1 to ${MAX_ASSETS} symbols of 1 to 64 characters (or "*")`));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, assets: [...assets], resolve, reject, refused: false, restoring: false });
      this.#next();
    });
  }

  /** A connection opened: sets it up as the applied subscription says. */
  opened(): void {
    this.#open = true;
    const steps = this.#subs.establish(this.#host.lastSeq());
    if (steps.length === 0) this.#ping({ kind: "setup", fatal: true, last: true });
    steps.forEach((msg, i) => {
      this.#sendCounted(msg);
      this.#ping({ kind: "setup", fatal: i === 0, last: i === steps.length - 1 });
    });
  }

  /** The client's keep-alive ping. */
  heartbeat(): void {
    this.#ping({ kind: "heartbeat" });
  }

  /** A pong: the oldest outstanding ping is answered. */
  pong(): void {
    const a = this.#awaiting.shift();
    if (a === undefined || a.kind === "heartbeat") return;
    if (a.kind === "setup") {
      if (a.last) {
        this.#ready = true;
        for (const w of this.#waiters) w.resolve();
        this.#waiters.clear();
        this.#next();
      }
      return;
    }
    const c = a.change;
    this.#current = null;
    if (!c.refused && !c.restoring) {
      const hadExceptions = this.#subs.allWithExceptions;
      if (c.op === "subscribe") this.#subs.subscribe(c.assets);
      else this.#subs.unsubscribe(c.assets);
      // The last assets left out of "every asset" are back: the server holds a list of the assets active when they
      // were left out, and only a subscribe to "*" makes it every asset again, later ones included. Sent as the next
      // step of this change (after the server has checked its names, which "*" would not).
      if (hadExceptions && this.#subs.everything) {
        c.restoring = true;
        this.#queue.unshift(c);
        this.#next();
        return;
      }
    }
    if (!c.refused) c.resolve();
    this.#next();
  }

  /**
   * An `error` refusing a request: whose it is. A change's is rejected with `error` here; a refused setup step that
   * is not `fatal` (taking the exceptions out of "every asset") only weakens the server's filter, the client's stays.
   */
  refused(error: Error): ErrorTarget {
    const a = this.#awaiting[0];
    if (a === undefined || a.kind === "heartbeat") return "none";
    if (a.kind === "setup") return a.fatal ? "setup" : "setup-step";
    if (!a.change.refused) {
      a.change.refused = true;
      a.change.reject(error);
    }
    return "change";
  }

  /** `rate_limited`: a message of ours was ignored, and with it maybe a ping. */
  rateLimited(): void {
    if (this.#awaiting.length > 0) this.#host.resync();
  }

  /** The connection is gone: a change in flight is sent again on the next one (it may or may not have applied). */
  lost(): void {
    this.#open = false;
    this.#ready = false;
    this.#awaiting = [];
    this.#sentAt = [];
    this.#clearPace();
    const c = this.#current;
    this.#current = null;
    if (c !== null && !c.refused) this.#queue.unshift(c);
  }

  /** The stream is closed: every change not yet applied, and every `whenReady()`, is rejected with `error`. */
  close(error: Error): void {
    this.lost();
    for (const c of this.#queue.splice(0)) c.reject(error);
    for (const w of this.#waiters) w.reject(error);
    this.#waiters.clear();
  }

  #next(): void {
    if (!this.#open || !this.#ready || this.#current !== null || this.#queue.length === 0 || this.#paceTimer !== null) return;
    const wait = this.#waitFor(2);
    if (wait > 0) {
      this.#paceTimer = this.#host.timers.setTimeout(() => {
        this.#paceTimer = null;
        this.#next();
      }, wait);
      return;
    }
    const c = this.#queue.shift()!;
    this.#current = c;
    const since = this.#host.lastSeq();
    const assets = c.restoring ? ["*"] : c.assets;
    this.#sendCounted(c.op === "subscribe" && since !== null ? { op: c.op, assets, since_seq: since } : { op: c.op, assets });
    this.#ping({ kind: "change", change: c });
  }

  #ping(a: Awaiting): void {
    if (this.#sendCounted(PING)) this.#awaiting.push(a);
  }

  #sendCounted(msg: object): boolean {
    if (!this.#open || !this.#host.send(msg)) return false;
    this.#sentAt.push(this.#host.now());
    return true;
  }

  /** Milliseconds until `n` more messages fit the pace (0: now). */
  #waitFor(n: number): number {
    const now = this.#host.now();
    while (this.#sentAt.length > 0 && this.#sentAt[0]! <= now - SEND_WINDOW_MS) this.#sentAt.shift();
    const over = this.#sentAt.length + n - SEND_MAX;
    return over <= 0 ? 0 : this.#sentAt[over - 1]! + SEND_WINDOW_MS - now;
  }

  #clearPace(): void {
    if (this.#paceTimer !== null) this.#host.timers.clearTimeout(this.#paceTimer);
    this.#paceTimer = null;
  }
}
