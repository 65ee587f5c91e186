/**
 * Per-client rate limiting: a sliding 60 s window approximated by two fixed windows (the previous window's count
 * weighted by how much of it still overlaps), so the budget refills continuously with O(1) memory per client. The
 * table of clients is bounded: beyond `maxClients` the least recently seen are evicted (an evicted client starts
 * fresh, which only ever errs toward allowing), so millions of distinct addresses cannot exhaust memory.
 *
 * `Retry-After` keeps its word (RFC 9110 10.2.3): it is the smallest whole number of seconds after which the same
 * client's next request is admitted, found with the very predicate `take` applies (the weighted count only falls
 * while the client waits, also across a window's roll-over), so waiting exactly that long is admitted and waiting one
 * second less is not. Refused requests count nothing.
 */
export interface RateDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the current window rolls over. */
  readonly resetSecs: number;
  /**
   * When refused: whole seconds after which this client's next request is admitted (the ceiling of the exact wait,
   * at least 1), if it sends nothing meanwhile. 0 when allowed.
   */
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
    }
    this.#clients.set(key, e);
    const weighted = this.#weighted(e, now);
    const resetSecs = Math.max(1, Math.ceil(((window + 1) * this.#windowMs - now) / 1000));
    if (weighted + 1 > this.#limit) {
      return { allowed: false, limit: this.#limit, remaining: 0, resetSecs, retryAfterSecs: this.#secondsUntilAdmitted(e, now) };
    }
    if (e.window !== window) {
      e.previous = e.window === window - 1 ? e.current : 0;
      e.current = 0;
      e.window = window;
    }
    e.current++;
    const remaining = Math.max(0, Math.floor(this.#limit - (weighted + 1)));
    return { allowed: true, limit: this.#limit, remaining, resetSecs, retryAfterSecs: 0 };
  }

  /**
   * Gives back the request `take` counted for `key` at `now` when a later check refused it (a route's own budget),
   * so a refused request costs no budget here either and the refusal's Retry-After holds for both budgets.
   */
  refund(key: string, now: number): void {
    const e = this.#clients.get(key);
    if (e !== undefined && e.window === Math.floor(now / this.#windowMs) && e.current > 0) e.current--;
  }

  /** Whole seconds until `take(key)` would admit a request (0: now), counting nothing. */
  waitSecs(key: string, now: number): number {
    const e = this.#clients.get(key);
    if (e === undefined || this.#admits(e, now)) return 0;
    return this.#secondsUntilAdmitted(e, now);
  }

  /** Drops clients idle for two full windows (they carry no weight any more). */
  sweep(now: number): void {
    const window = Math.floor(now / this.#windowMs);
    for (const [k, e] of this.#clients) if (e.window < window - 1) this.#clients.delete(k);
  }

  /**
   * The weighted count of `e` at `t` (not before its last request), as if its windows had rolled to `t`'s: the
   * previous window's count weighted by its remaining overlap, plus the current window's. `take` rolls the entry to
   * the same values, so this is the count `take` compares at `t`. Non-increasing in `t` and continuous at a
   * roll-over (just before it the previous count weighs 0 and the current counts whole; just after it that count is
   * the previous one, weighing 1).
   */
  #weighted(e: Entry, t: number): number {
    const window = Math.floor(t / this.#windowMs);
    const into = (t - window * this.#windowMs) / this.#windowMs; // fraction of t's window elapsed
    if (window === e.window) return e.previous * (1 - into) + e.current;
    if (window === e.window + 1) return e.current * (1 - into);
    return 0;
  }

  #admits(e: Entry, t: number): boolean {
    return this.#weighted(e, t) + 1 <= this.#limit;
  }

  /**
   * The smallest whole number of seconds s >= 1 such that a request at `now + s` s is admitted. The weighted count
   * never rises while the client waits, so admission is monotone in s and a binary search over the same predicate
   * finds it exactly (no float drift between the promise and the check); two windows on, nothing weighs any more.
   */
  #secondsUntilAdmitted(e: Entry, now: number): number {
    let lo = 1;
    let hi = Math.ceil((2 * this.#windowMs) / 1000);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#admits(e, now + mid * 1000)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
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
