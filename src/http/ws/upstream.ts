/**
 * Whether this process can see the stream: a WebSocket client of a process cut off from NATS would stay connected and
 * hear nothing (a partition that resets nothing is noticed by no socket), so the process pings NATS itself. No
 * answer for `graceMs` (the pings keep going) is a loss (`onChange(why)`); the next answer is the recovery
 * (`onChange(null)`). The hub then closes its clients so they reconnect where the stream is seen (`WsHub.unavailable`).
 */
export interface UpstreamWatchOptions {
  /** One round trip to NATS (`nc.rtt()`); resolves when answered. */
  readonly ping: () => Promise<unknown>;
  /** Without an answer this long, the link is lost. Default 5 s. */
  readonly graceMs?: number;
  /** Between pings. Default 1 s. */
  readonly everyMs?: number;
  readonly onChange: (why: string | null) => void;
  /** Monotonic milliseconds. Default `performance.now`. */
  readonly now?: () => number;
}

export interface UpstreamWatch {
  /** Why the link is lost now, or null. */
  readonly down: string | null;
  /** One round: a ping (unless one is unanswered) and the verdict. The watch runs it every `everyMs`. */
  check(): void;
  stop(): void;
}

export function watchUpstream(o: UpstreamWatchOptions): UpstreamWatch {
  const now = o.now ?? (() => performance.now());
  const graceMs = o.graceMs ?? 5_000;
  let answeredAt = now();
  let down: string | null = null;
  let inFlight = false;
  const tick = () => {
    if (!inFlight) {
      inFlight = true;
      o.ping().then(
        () => {
          inFlight = false;
          answeredAt = now();
          if (down !== null) {
            down = null;
            o.onChange(null);
          }
        },
        () => (inFlight = false),
      );
    }
    if (down === null && now() - answeredAt >= graceMs) {
      down = `this process has had no answer from NATS for ${Math.round((now() - answeredAt) / 1000)} s: reconnect with since_seq (to another process, if there is one)`;
      o.onChange(down);
    }
  };
  const timer = setInterval(tick, o.everyMs ?? 1_000);
  timer.unref?.();
  return {
    get down() {
      return down;
    },
    check: tick,
    stop: () => clearInterval(timer),
  };
}
