/**
 * Per-client rate limiting: a sliding 60 s window approximated by two fixed windows (the previous window's count
 * weighted by how much of it still overlaps), so the budget refills continuously with O(1) memory per client. The
 * table of clients is bounded: beyond `maxClients` the least recently seen are evicted (an evicted client starts
 * fresh, which only ever errs toward allowing), so millions of distinct addresses cannot exhaust memory.
 */
export interface RateDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the current window rolls over. */
  readonly resetSecs: number;
  /** When refused: seconds until one more request would be allowed. */
  readonly retryAfterSecs: number;
}

interface Entry {
  window: number;
  current: number;
  previous: number;
}

export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxClients: number;
  readonly #clients = new Map<string, Entry>();

  constructor(limitPerWindow: number, windowMs = 60_000, maxClients = 100_000) {
    if (!(limitPerWindow >= 1)) throw new RangeError("limit must be at least 1");
    this.#limit = limitPerWindow;
    this.#windowMs = windowMs;
    this.#maxClients = maxClients;
  }

  get size(): number {
    return this.#clients.size;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Counts one request of `key` at `now` (epoch ms) if the budget allows it. */
  take(key: string, now: number): RateDecision {
    const window = Math.floor(now / this.#windowMs);
    let e = this.#clients.get(key);
    if (e === undefined) {
      e = { window, current: 0, previous: 0 };
      if (this.#clients.size >= this.#maxClients) {
        const oldest = this.#clients.keys().next();
        if (!oldest.done) this.#clients.delete(oldest.value);
      }
    } else {
      this.#clients.delete(key); // re-inserted below: Map order is recency order
      if (e.window !== window) {
        e.previous = e.window === window - 1 ? e.current : 0;
        e.current = 0;
        e.window = window;
      }
    }
    this.#clients.set(key, e);
    const into = (now - window * this.#windowMs) / this.#windowMs; // fraction of the current window elapsed
    const weighted = e.previous * (1 - into) + e.current;
    const resetSecs = Math.max(1, Math.ceil(((window + 1) * this.#windowMs - now) / 1000));
    if (weighted + 1 > this.#limit) {
      // The weighted count falls as the previous window slides out; when it has no weight left, wait for the roll.
      const excess = weighted + 1 - this.#limit;
      const retryMs = e.previous > 0 ? Math.min((excess / e.previous) * this.#windowMs, (window + 1) * this.#windowMs - now) : (window + 1) * this.#windowMs - now;
      return { allowed: false, limit: this.#limit, remaining: 0, resetSecs, retryAfterSecs: Math.max(1, Math.ceil(retryMs / 1000)) };
    }
    e.current++;
    const remaining = Math.max(0, Math.floor(this.#limit - (weighted + 1)));
    return { allowed: true, limit: this.#limit, remaining, resetSecs, retryAfterSecs: 0 };
  }

  /** Drops clients idle for two full windows (they carry no weight any more). */
  sweep(now: number): void {
    const window = Math.floor(now / this.#windowMs);
    for (const [k, e] of this.#clients) if (e.window < window - 1) this.#clients.delete(k);
  }
}

/** The rate-limit response headers: IETF draft fields plus the widely used RateLimit-* and X-RateLimit-* ones. */
export function rateLimitHeaders(d: RateDecision, policy = "default"): Record<string, string> {
  const h: Record<string, string> = {};
  addRateLimitHeaders(h, d, policy);
  return h;
}

/** Adds the rate-limit response headers of `d` to `into` (the hot path: no intermediate object). */
export function addRateLimitHeaders(into: Record<string, string>, d: RateDecision, policy = "default"): void {
  const limit = String(d.limit);
  const remaining = String(d.remaining);
  const reset = String(d.resetSecs);
  into["ratelimit-limit"] = limit;
  into["ratelimit-remaining"] = remaining;
  into["ratelimit-reset"] = reset;
  into["x-ratelimit-limit"] = limit;
  into["x-ratelimit-remaining"] = remaining;
  into["x-ratelimit-reset"] = reset;
  into["ratelimit-policy"] = `"${policy}";q=${limit};w=60`;
  into["ratelimit"] = `"${policy}";r=${remaining};t=${reset}`;
  if (!d.allowed) into["retry-after"] = String(d.retryAfterSecs);
}

/**
 * Appends a second policy `d` to the structured fields `into` already carries (`RateLimit-Policy` and `RateLimit` are
 * lists): a route with its own budget shows that budget in the scalar fields and both policies in the lists.
 */
export function addRateLimitPolicy(into: Record<string, string>, d: RateDecision, policy = "default"): void {
  into["ratelimit-policy"] = `${into["ratelimit-policy"] ?? ""}, "${policy}";q=${d.limit};w=60`.replace(/^, /, "");
  into["ratelimit"] = `${into["ratelimit"] ?? ""}, "${policy}";r=${d.remaining};t=${d.resetSecs}`.replace(/^, /, "");
}
