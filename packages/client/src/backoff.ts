/** Reconnect delays: exponential backoff with jitter. */

export interface BackoffOptions {
  /** Delay ceiling of the first retry, ms (default 500). */
  readonly initialMs?: number;
  /** Largest delay, ms (default 30,000). */
  readonly maxMs?: number;
  /** Growth per failed attempt (default 2). */
  readonly factor?: number;
}

/**
 * The delay before reconnect attempt `attempt` (0-based, counted since the server last greeted the client):
 * `ceiling = min(maxMs, initialMs * factor^attempt)`, then "equal jitter": a uniform draw in `[ceiling/2, ceiling]`.
 * Half the ceiling is always waited, so a server that accepts and drops at once is not hammered; the random half
 * spreads the clients of a restarted server over time instead of bringing them back in one wave.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const initial = options.initialMs ?? 500;
  const max = options.maxMs ?? 30_000;
  const factor = options.factor ?? 2;
  const n = Math.max(0, Math.min(64, Math.floor(attempt)));
  const ceiling = Math.min(max, initial * factor ** n);
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(ceiling / 2 + (r * ceiling) / 2);
}
