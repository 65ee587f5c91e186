import type { LogFn } from "../../streams/jetstream/index.ts";

/** How often the watch looks, and how late a look must be to be reported. */
const EVERY_MS = 100;
const REPORT_MS = 500;

/**
 * Logs each stall of the event loop longer than 500 ms ("event loop blocked", with how long). An engine's leases are
 * renewed by a thread of their own (`LeaseKeeperThread`), which gives them up once this loop has not run for 5 s: the
 * operator (and bench:cluster) sees whether a lapsed lease was this process's own stall or a slow NATS. Returns the
 * stop.
 */
export function watchLoopStalls(log: LogFn, now: () => number = () => performance.now()): () => void {
  let last = now();
  const timer = setInterval(() => {
    const t = now();
    const late = t - last - EVERY_MS;
    last = t;
    if (late >= REPORT_MS) log("warn", "event loop blocked", { ms: Math.round(late + EVERY_MS) });
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
