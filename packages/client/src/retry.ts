/**
 * Retries of REST calls that are safe to repeat: a `fetch` wrapper under openapi-fetch (its custom `fetch` option),
 * so `client.raw` retries like the typed methods. It retries what the service or the network says is temporary (no
 * answer, 429, 502, 503, 504), waits as a 429 or 503's `Retry-After` asks (or backs off with jitter), and stops at
 * once when the caller's signal aborts, in a wait included.
 */
import { backoffDelay } from "./backoff.ts";
import { parseRetryAfter } from "./errors.ts";
import type { StreamTimers } from "./stream-options.ts";

/**
 * How failed calls are retried (`PegClientOptions.retry`, or per call). Only idempotent calls are retried: GET, HEAD,
 * OPTIONS, PUT, DELETE, and a POST or PATCH marked `idempotent: true`.
 */
export interface RetryOptions {
  /** Retries after the first attempt (default 3): a call sends at most `retries + 1` requests. */
  readonly retries?: number;
  /** Backoff ceiling of the first retry, ms (default 500); it doubles per retry, a draw in its upper half (`backoffDelay`). */
  readonly baseMs?: number;
  /** Largest backoff, ms (default 10,000). */
  readonly maxMs?: number;
  /**
   * The longest `Retry-After` the client waits out, ms (default 60,000). A 429 or 503 asking for longer is not
   * retried: the call fails at once with that `ApiError`, whose `retryAfterSecs` says when to come back.
   */
  readonly maxRetryAfterMs?: number;
  /** Called before each wait, e.g. to log it. */
  readonly onRetry?: (retry: RetryInfo) => void;
}

/** Statuses worth retrying: rate limited, and a gateway or service that is temporarily unable to answer. */
export type RetryStatus = 429 | 502 | 503 | 504;

/** A retry about to be waited for: why, which one (1 for the first retry), and how long the wait is. */
export type RetryInfo = {
  readonly method: string;
  readonly url: string;
  readonly attempt: number;
  readonly delayMs: number;
} & (
  | { readonly reason: "status"; readonly status: RetryStatus; /** The answer's `Retry-After`, ms; null without one. */ readonly retryAfterMs: number | null }
  | { readonly reason: "network_error"; readonly error: unknown }
);

/** Methods HTTP defines as idempotent (RFC 9110 9.2.2) that the client retries without being told. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
const RETRY_STATUSES: ReadonlySet<number> = new Set<RetryStatus>([429, 502, 503, 504]);

/** A retry policy with its defaults filled in. */
export interface RetryPolicy {
  readonly retries: number;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly maxRetryAfterMs: number;
  readonly onRetry: ((retry: RetryInfo) => void) | undefined;
}

/** The client's options over the defaults, then a call's over those; `false` at either level: no retry. */
export function retryPolicy(client: RetryOptions | false | undefined, call?: RetryOptions | false): RetryPolicy | null {
  if (client === false || call === false) return null;
  const o = { ...client, ...call };
  const retries = Math.max(0, Math.floor(o.retries ?? 3));
  if (retries === 0) return null;
  return { retries, baseMs: o.baseMs ?? 500, maxMs: o.maxMs ?? 10_000, maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000, onRetry: o.onRetry };
}

/** What one attempt runs on: the fetch, its timeout, and the clock, timers and randomness of the waits. */
export interface Transport {
  readonly fetch: (request: Request) => Promise<Response>;
  /** Per attempt; 0 for none. */
  readonly timeoutMs: number;
  readonly timers: StreamTimers;
  readonly now: () => number;
  readonly random: () => number;
}

/** What a fetch in flight needs alive until it settles (see `held`). */
const inFlight = new Set<readonly unknown[]>();

/**
 * `answer`, with `parts` (the timeout signal, the combined signal, the request) kept reachable until it settles.
 * Node holds a timeout signal, a combined signal's sources and a Request's link to its signal only weakly
 * (nodejs/node#57736, nodejs/undici#3644): when nothing else holds them, as with a fetch that waits on the request's
 * signal alone, a garbage collection can take them before the timeout fires, and the request waits for ever.
 */
function held<T>(parts: readonly unknown[], answer: Promise<T>): Promise<T> {
  inFlight.add(parts);
  return answer.finally(() => inFlight.delete(parts));
}

/**
 * Sends `request`, retrying it under `policy` (null: once, as it is). Resolves with the last answer, retried or not
 * (the caller turns an error status into an `ApiError`), or rejects with the last network error, or with the
 * caller's abort reason as soon as its signal aborts.
 */
export async function fetchWithRetry(request: Request, policy: RetryPolicy | null, t: Transport): Promise<Response> {
  const signal = request.signal;
  const retries = policy?.retries ?? 0;
  for (let attempt = 0; ; attempt++) {
    const last = attempt >= retries;
    // A body can be read once: every attempt but the last sends a copy.
    const copy = last ? request : request.clone();
    const timeout = t.timeoutMs > 0 ? AbortSignal.timeout(t.timeoutMs) : null;
    const combined = timeout === null ? null : AbortSignal.any([signal, timeout]);
    const sent = combined === null ? copy : new Request(copy, { signal: combined });
    let info: RetryInfo;
    const backoff = policy === null ? 0 : backoffDelay(attempt, { initialMs: policy.baseMs, maxMs: policy.maxMs }, t.random);
    const base = { method: request.method, url: request.url, attempt: attempt + 1 };
    try {
      const response = await held([timeout, combined, sent], t.fetch(sent));
      if (last || policy === null || !RETRY_STATUSES.has(response.status)) return response;
      const status = response.status as RetryStatus;
      const secs = status === 429 || status === 503 ? parseRetryAfter(response.headers.get("retry-after"), t.now()) : null;
      const retryAfterMs = secs === null ? null : secs * 1000;
      if (retryAfterMs !== null && retryAfterMs > policy.maxRetryAfterMs) return response;
      await discard(response);
      info = { ...base, delayMs: Math.max(retryAfterMs ?? 0, backoff), reason: "status", status, retryAfterMs };
    } catch (e) {
      if (last || policy === null || signal.aborted) throw e;
      info = { ...base, delayMs: backoff, reason: "network_error", error: e };
    }
    policy.onRetry?.(info);
    await sleep(info.delayMs, signal, t.timers);
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts (clearing the timer). */
export function sleep(ms: number, signal: AbortSignal, timers: StreamTimers): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timers.clearTimeout(handle);
      reject(signal.reason);
    };
    const handle = timers.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Lets go of an answer that is not used, so its connection can be reused. */
async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // already read or broken: nothing to free
  }
}
